// What the package ships: a LICENSE that matches package.json, and nothing that needs a dev
// dependency to run (the build scripts stay in the clone).

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { license: string; files: string[]; devDependencies: Record<string, string>; scripts: Record<string, string> };

describe('the package', () => {
  it('has an MIT LICENSE naming the reporting authors, shipped with it', () => {
    expect(pkg.license).toBe('MIT');
    const license = readFileSync(new URL('LICENSE', root), 'utf8');
    expect(license).toMatch(/^MIT License/);
    expect(license).toContain('Copyright (c) 2026 the reporting authors');
    expect(pkg.files).toContain('LICENSE');
  });

  it('ships the docs that --help and the README point to', () => {
    expect(pkg.files).toContain('README.md');
    expect(pkg.files).toContain('docs');
  });

  it('ships no script that imports a dev dependency', () => {
    expect(pkg.files).not.toContain('scripts');
    const bin = readFileSync(new URL('bin/reporting.js', root), 'utf8');
    for (const dev of Object.keys(pkg.devDependencies)) expect(bin).not.toContain(`'${dev}`);
  });
});
