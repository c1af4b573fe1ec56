import { readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { writeFileAtomic } from '../../src/fs/atomic.js';
import { replaceIfChanged, sha256File, writeFileIfChanged } from '../../src/fs/files.js';
import { tempDir } from '../helpers/tmp.js';

const LONG_AGO = new Date('2026-01-01T00:00:00Z');

describe('a file whose content did not change is left untouched', () => {
  it('writeFileIfChanged: same bytes keep the file, its inode and its mtime; other bytes replace it', async () => {
    const dir = tempDir();
    const path = join(dir, 'buyer-2026-11-19.csv');
    expect(await writeFileIfChanged(path, 'date,clicks\n2026-11-19,3\n')).toMatchObject({ outcome: 'written', bytes: 25 });
    utimesSync(path, LONG_AGO, LONG_AGO);
    const before = statSync(path);

    const same = await writeFileIfChanged(path, 'date,clicks\n2026-11-19,3\n');
    expect(same.outcome).toBe('unchanged');
    const after = statSync(path);
    expect(after.mtimeMs).toBe(before.mtimeMs);
    expect(after.ino).toBe(before.ino);

    const changed = await writeFileIfChanged(path, 'date,clicks\n2026-11-19,4\n');
    expect(changed.outcome).toBe('written');
    expect(readFileSync(path, 'utf8')).toBe('date,clicks\n2026-11-19,4\n');
    expect(statSync(path).mtimeMs).toBeGreaterThan(before.mtimeMs);
    // the sha256 reported is the file's, as sha256sum computes it
    const { execFileSync } = await import('node:child_process');
    expect(execFileSync('sha256sum', [path], { encoding: 'utf8' }).split(' ')[0]).toBe(changed.sha256);
    expect(readdirSync(dir)).toEqual(['buyer-2026-11-19.csv']);
  });

  it('replaceIfChanged: a streamed temporary file replaces the target only when it differs', async () => {
    const dir = tempDir();
    const target = join(dir, 'day.ndjson');
    writeFileSync(target, '{"clicks":3}\n');
    utimesSync(target, LONG_AGO, LONG_AGO);
    const temp = join(dir, '.day.ndjson.tmp');

    writeFileSync(temp, '{"clicks":3}\n');
    expect(await replaceIfChanged(temp, target)).toMatchObject({ outcome: 'unchanged', bytes: 13 });
    expect(statSync(target).mtime).toEqual(LONG_AGO);
    expect(readdirSync(dir)).toEqual(['day.ndjson']);

    writeFileSync(temp, '{"clicks":5}\n');
    const replaced = await replaceIfChanged(temp, target);
    expect(replaced.outcome).toBe('written');
    expect(readFileSync(target, 'utf8')).toBe('{"clicks":5}\n');
    expect(replaced.sha256).toBe((await sha256File(target))?.sha256);
    expect(readdirSync(dir)).toEqual(['day.ndjson']);

    // no target yet: written
    writeFileSync(temp, 'x');
    expect((await replaceIfChanged(temp, join(dir, 'new.csv'))).outcome).toBe('written');
  });

  it('writeFileAtomic creates missing folders and leaves no temporary file', async () => {
    const dir = tempDir();
    const path = join(dir, 'a', 'b', 'state.json');
    await writeFileAtomic(path, '{}\n', 0o600);
    expect(readFileSync(path, 'utf8')).toBe('{}\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(dir, 'a', 'b'))).toEqual(['state.json']);
    expect(await sha256File(join(dir, 'missing'))).toBeUndefined();
  });
});
