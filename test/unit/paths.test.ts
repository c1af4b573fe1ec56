// A settled pass (src/paths.ts withSettledPaths: a job file's thousands of paths, each folder listed
// once) answers as the file system does outside one: the real paths, the clashes with the tool's own
// files (found once a pass), and a state that is not there.

import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { kindOf, listedAbsent, realTarget, refuseSharedPaths, resolveIn, runFiles, withSettledPaths, withSettledPathsAsync } from '../../src/paths.js';
import { readStateText } from '../../src/engine/stores/file.js';
import { UsageError } from '../../src/errors.js';

let dir: string;
beforeEach(() => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'reporting-paths-')));
  mkdirSync(join(dir, 'real', 'deep'), { recursive: true });
  symlinkSync(join(dir, 'real'), join(dir, 'link'));
  symlinkSync(join(dir, 'nowhere', 'x.json'), join(dir, 'dangling.json'));
  writeFileSync(join(dir, 'real', 'file.csv'), 'a\n');
  writeFileSync(join(dir, 'plain'), 'not a folder\n');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const errorOf = (check: () => void): string | undefined => {
  try {
    check();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
};

describe('a settled pass answers as the file system does', () => {
  it('real paths: links, `..`, `.`, `//`, a trailing `/`, missing folders, a dangling link, relative paths', () => {
    const paths = [
      'link/file.csv', 'link/deep/../file.csv', './link//deep/./new.csv', 'link/deep/', `${dir}/link/new/folders/a.csv`, `${dir}//real/./deep/../deep`,
      'dangling.json', 'missing/one/two.json', 'plain/under.json', '/', `${dir}/real/file.csv`, `${dir}/link/.hidden/..x/y`,
    ];
    const outside = paths.map((path) => realTarget(path, dir));
    expect(outside[0]).toBe(join(dir, 'real', 'file.csv'));
    expect(outside[6]).toBe(join(dir, 'nowhere', 'x.json'));
    // twice in one pass: the second answers from what the first found
    const inside = withSettledPaths(() => [paths.map((path) => realTarget(path, dir)), paths.map((path) => realTarget(path, dir))]);
    expect(inside[0]).toEqual(outside);
    expect(inside[1]).toEqual(outside);
  });

  it("the tool's own files: a clash is found in every job of a pass, whatever the folder it is named from", () => {
    const config = join(dir, 'config');
    const clashes = (cwd: string) => [
      errorOf(() => refuseSharedPaths(runFiles(join(config, 'config.json'), [join(dir, 'a.csv')], config), cwd, 'linux')),
      errorOf(() => refuseSharedPaths(runFiles(join(dir, 's.json'), [join(config, 'journal', 'x.csv')], config), cwd, 'linux')),
      errorOf(() => refuseSharedPaths(runFiles(join(dir, 's.json'), [join(dir, 'b.csv')], config), cwd, 'linux')),
      errorOf(() => refuseSharedPaths(runFiles('s.json', ['../link/../config/requests/r.csv'], 'config'), join(dir, 'real'), 'linux')),
      errorOf(() => refuseSharedPaths(runFiles('s.json', ['config/requests/r.csv'], 'config'), cwd, 'linux')),
    ];
    const outside = clashes(dir);
    expect(outside[0]).toMatch(/refusing to write over the token store .*: --state names it/);
    expect(outside[1]).toMatch(/refusing to write over the journal .*: -o names it/);
    expect(outside[2]).toBeUndefined();
    expect(outside[3]).toBeUndefined();
    expect(outside[4]).toMatch(/refusing to write over the submitted reports' requests/);
    expect(withSettledPaths(() => [clashes(dir), clashes(dir), clashes(join(dir, 'real'))])).toEqual([outside, outside, clashes(join(dir, 'real'))]);
  });

  it("one check keeps its answers (a configuration folder not made yet): a link into it is still the tool's file", () => {
    // the check walks the missing folder up once for its five files; a path under a folder found
    // not there is not there either, but a link into it is still followed
    const config = join(dir, 'not-yet', 'reporting');
    symlinkSync(join(config, 'config.json'), join(dir, 'into-store.csv'));
    const check = (state: string, output: string) => errorOf(() => refuseSharedPaths(runFiles(state, [output], config), dir, 'linux'));
    expect(check('s.json', 'into-store.csv')).toMatch(/refusing to write over the token store .*: -o names it/);
    expect(check('s.json', 'real/../not-yet/reporting/journal/a.csv')).toMatch(/refusing to write over the journal .*: -o names it/);
    expect(check('not-yet/reporting/config.json.lock', 'a.csv')).toMatch(/refusing to write over the token store's lock file .*: --state names it/);
    expect(check('not-yet/s.json', 'not-yet/reporting-2/a.csv')).toBeUndefined();
    expect(withSettledPaths(() => check('s.json', 'into-store.csv'))).toMatch(/token store/);
    // nothing kept from one check to the next: the folder made (a link elsewhere), a path there is the journal's
    mkdirSync(join(dir, 'elsewhere', 'reporting'), { recursive: true });
    symlinkSync(join(dir, 'elsewhere'), join(dir, 'not-yet'));
    expect(check('s.json', 'elsewhere/reporting/journal/a.csv')).toMatch(/refusing to write over the journal .*: -o names it/);
    expect(check('s.json', 'real/a.csv')).toBeUndefined();
  });

  it('a state not there: known from the listings in a pass; a path under a file is still an error', () => {
    const missing = [join(dir, 'real', 'none.json'), join(dir, 'gone', 'deeper', 's.json')];
    expect(missing.map(listedAbsent)).toEqual([false, false]);
    expect(withSettledPaths(() => [...missing, join(dir, 'real', 'file.csv'), join(dir, 'plain', 's.json'), join(dir, 'dangling.json')].map(listedAbsent))).toEqual([true, true, false, false, false]);
    withSettledPaths(() => {
      expect(missing.map(readStateText)).toEqual([undefined, undefined]);
      expect(readStateText(join(dir, 'real', 'file.csv'))?.text).toBe('a\n');
      expect(() => readStateText(join(dir, 'plain', 's.json'))).toThrow(UsageError);
      expect(() => readStateText(join(dir, 'plain', 's.json'))).toThrow(/cannot read the state file .*plain\/s\.json/);
    });
  });
});

describe('a settled pass ends with itself', () => {
  it('two passes that wait at once (the first ends first) leave no answer behind: a file made after both is seen', async () => {
    const later = join(dir, 'real', 'later.csv');
    let endFirst!: () => void;
    let endSecond!: () => void;
    const first = withSettledPathsAsync(() => new Promise<void>((resolve) => { endFirst = resolve; }));
    const second = withSettledPathsAsync(async () => {
      // the folder's listing read in a pass: no later.csv there
      expect(kindOf(later)).toBeUndefined();
      await new Promise<void>((resolve) => { endSecond = resolve; });
    });
    endFirst();
    await first;
    endSecond();
    await second;
    writeFileSync(later, 'a\n');
    expect(kindOf(later)?.isFile()).toBe(true);
    expect(listedAbsent(later)).toBe(false);
  });
});

describe('resolveIn (a job file\'s paths from its folder)', () => {
  it('names the path resolve() names, whatever its spelling', () => {
    const folders = ['/', '/srv/jobs', '/srv/jobs/', '/srv//jobs', '/srv/./jobs', '/srv/x/../jobs', 'relative/jobs', ''];
    const paths = ['state/job-1.json', 'out/{job}/{since}.csv', 'x', '.x', '..x', 'a/..b/c', './x', '../x', 'a/./b', 'a/../b', 'a//b', 'a/', 'a/.', 'a/..', '.', '..', '', '/abs/x.csv', '/abs//x', '/abs/../x', '/', 'a\\b'];
    for (const folder of folders) {
      for (const path of paths) expect(resolveIn(folder, path), `${folder} + ${path}`).toBe(resolve(folder, path));
    }
  });
});
