// This test process as a Host (src/host.ts), as src/main.ts builds it for the CLI. Its exit
// cleanups run when the test process exits, as the CLI's do.

import { processHost } from '../../src/main.js';
import { ExitCleanups } from '../../src/host.js';

const cleanups = new ExitCleanups();
process.once('exit', () => cleanups.run());

export const HOST = processHost(cleanups);
