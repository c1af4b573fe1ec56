// A network failure in one line, decided by error codes and classes (undici's and Node's messages
// are not an interface). A bottom module: the API client, the download's stall guard and the table
// destination reach it downwards.

const NETWORK_CODES: Record<string, string> = {
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_HEADERS_TIMEOUT: 'no answer within the timeout',
  UND_ERR_BODY_TIMEOUT: 'the answer stalled longer than the timeout',
  UND_ERR_SOCKET: 'the connection was closed',
  UND_ERR_CLOSED: 'the connection was closed',
  UND_ERR_DESTROYED: 'the connection was closed',
  UND_ERR_HEADERS_OVERFLOW: 'the answer\'s headers were too large',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'the answer was shorter or longer than its Content-Length',
  UND_ERR_RES_EXCEEDED_MAX_SIZE: 'the answer was too large',
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host lookup failed',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'the connection was closed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  Z_DATA_ERROR: 'the compressed answer was corrupt',
  Z_BUF_ERROR: 'the compressed answer was cut short',
};

/** A one-line description of a network failure, or undefined if the error is not one. Decided by
 * error codes and classes only (undici's messages are not an interface). */
export function describeNetworkError(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    if (current instanceof NetworkFailure) return current.description;
    // malformed HTTP (an invalid chunk size, a bad header line): the llhttp parser's HPE_* codes
    if (current.name === 'HTTPParserError') return 'the server sent malformed HTTP';
    const code = (current as NodeJS.ErrnoException).code;
    if (code && NETWORK_CODES[code]) return NETWORK_CODES[code];
    if (typeof code === 'string' && code.startsWith('HPE_')) return 'the server sent malformed HTTP';
    if (current.name === 'AggregateError') current = (current as AggregateError).errors[0];
    else current = (current as Error & { cause?: unknown }).cause;
  }
  return undefined;
}

/** A failure this module detects itself (a deadline, a stall, a refused address), described. */
export class NetworkFailure extends Error {
  constructor(readonly description: string) {
    super(description);
  }
}
