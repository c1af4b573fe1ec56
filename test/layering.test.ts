// The arrows of ARCHITECTURE.md, checked on every test run so they cannot silently break again:
// the import rules of .dependency-cruiser.cjs (no circle, type-level included; nothing below the
// CLI imports cli/), `process` touched by src/main.ts only, and `import()` only at the lazy
// boundaries.

import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cruise } from 'dependency-cruiser';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function sources(dir = join(ROOT, 'src')): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [relative(ROOT, path)] : [];
  });
}

/** The file without its comments (a comment may name `process` or `import(`). */
const code = (file: string) => readFileSync(join(ROOT, file), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');

describe('layering', () => {
  it('no import circle and no arrow against the layers (dependency-cruiser)', async () => {
    const { default: config } = await import(join(ROOT, '.dependency-cruiser.cjs')) as { default: { forbidden: unknown[]; options: Record<string, unknown> } };
    const result = await cruise(['src'], { ...config.options, validate: true, ruleSet: { forbidden: config.forbidden }, baseDir: ROOT } as never);
    const output = result.output as { summary: { violations: { rule: { name: string }; from: string; to: string; cycle?: { name: string }[] }[]; totalCruised: number } };
    expect(output.summary.totalCruised).toBeGreaterThan(50);
    const violations = output.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}${v.cycle ? ` (${v.cycle.map((step) => step.name).join(' -> ')})` : ''}`);
    expect(violations).toEqual([]);
  }, 60_000);

  it('no circle between the rooms of src/ (its folders, and each file at its top), type-level included', async () => {
    const { default: config } = await import(join(ROOT, '.dependency-cruiser.cjs')) as { default: { options: Record<string, unknown> } };
    const result = await cruise(['src'], { ...config.options, baseDir: ROOT } as never);
    const modules = (result.output as { modules: { source: string; dependencies: { resolved: string }[] }[] }).modules;
    const roomOf = (file: string) => file.split('/')[1]?.replace(/\.ts$/, '') ?? file;
    const edges = new Map<string, Set<string>>();
    for (const module of modules.filter((m) => m.source.startsWith('src/'))) {
      for (const dependency of module.dependencies.filter((d) => d.resolved.startsWith('src/'))) {
        const [from, to] = [roomOf(module.source), roomOf(dependency.resolved)];
        if (from !== to) edges.set(from, (edges.get(from) ?? new Set()).add(to));
      }
    }
    // a room that reaches itself again through other rooms is in a circle
    const reaches = (start: string): Set<string> => {
      const seen = new Set<string>();
      const stack = [...(edges.get(start) ?? [])];
      while (stack.length) {
        const room = stack.pop() as string;
        if (seen.has(room)) continue;
        seen.add(room);
        stack.push(...(edges.get(room) ?? []));
      }
      return seen;
    };
    expect([...edges.keys()].filter((room) => reaches(room).has(room)).sort()).toEqual([]);
  }, 60_000);

  it('help and completion read the catalog, which reaches no package (luxon there cost --help 16 ms, measured)', () => {
    // the modules src/report/catalog.ts loads, type-only imports aside (erased at build time)
    const packages = new Set<string>();
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const match of code(file).matchAll(/^\s*(?:import|export)\s+(?!type\b)[^;]*?from\s+'([^']+)'/gm)) {
        const target = match[1] as string;
        if (target.startsWith('.')) visit(relative(ROOT, join(ROOT, file, '..', target.replace(/\.js$/, '.ts'))));
        else packages.add(target);
      }
    };
    visit('src/report/catalog.ts');
    expect([...packages]).toEqual([]);
  });

  it('process is touched by src/main.ts only (the rest gets what it needs from the factory)', () => {
    const touching = sources().filter((file) => file !== 'src/main.ts' && /\bprocess\s*[.[]/.test(code(file)));
    expect(touching).toEqual([]);
  });

  it('import() only at the lazy boundaries: main, the registry and program (commands, factory), the format table, lazy.ts', () => {
    const allowed = new Set(['src/main.ts', 'src/cli/registry.ts', 'src/cli/program.ts', 'src/export/export.ts', 'src/lazy.ts']);
    const dynamic = sources().filter((file) => !allowed.has(file) && /\bimport\(/.test(code(file).replace(/typeof import\(/g, '')));
    expect(dynamic).toEqual([]);
  });
});
