// Python, the independent reader of CSV files in the tests. Its real executable, not a version
// manager's shim (pyenv's shims print to stderr when many run at once), or undefined without one.

import { spawnSync } from 'node:child_process';

const found = spawnSync('python3', ['-c', 'import csv, sys; print(sys.executable)'], { encoding: 'utf8' });
export const PYTHON: string | undefined = found.status === 0 ? found.stdout.trim() || 'python3' : undefined;
