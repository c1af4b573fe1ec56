// A minimal stand-in for the API that answers a download with exactly the body a test wants:
// hostile values, numbers the sandbox never produces, fields that appear late.

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export async function craftedServer(body: string): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.setHeader('Content-Type', 'application/json');
      if (req.url === '/buyer-reporting' || req.url === '/seller-reporting') res.end('{"response":{"status":"OK","report_id":"crafted"}}');
      else if (req.url === '/status-reporting') res.end('{"response":{"status":"ready","message":"ready","report_id":"crafted"}}');
      else if (req.url === '/download-reporting') {
        // in small pieces, so that values are cut across chunks
        const bytes = Buffer.from(body);
        for (let i = 0; i < bytes.length; i += 7) res.write(bytes.subarray(i, i + 7));
        res.end();
      } else {
        res.statusCode = 404;
        res.end('{"response":{"error_id":"NOT_FOUND","error":"no"}}');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}
