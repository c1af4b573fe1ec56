// The import rules of ARCHITECTURE.md ("Arrows run one way"), checked by test/layering.test.ts.
// Type-only imports count (tsPreCompilationDeps): a circle of types is a circle.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', comment: 'no import circle, type-level included', from: {}, to: { circular: true } },
    { name: 'cli-stays-on-top', severity: 'error', comment: 'only main.ts and cli/ import cli/', from: { path: '^src/', pathNot: '^src/(cli/|main\\.ts$)' }, to: { path: '^src/cli/' } },
    { name: 'nothing-imports-main', severity: 'error', from: { path: '^src/' }, to: { path: '^src/main\\.ts$' } },
    { name: 'commands-are-leaves', severity: 'error', comment: 'a command is reached through the registry only', from: { path: '^src/', pathNot: '^src/(cli/|commands/)' }, to: { path: '^src/commands/' } },
    { name: 'io-below-engine', severity: 'error', comment: 'terminal concerns know nothing of runs', from: { path: '^src/io/' }, to: { path: '^src/(engine|destinations|commands)/' } },
    { name: 'destinations-below-engine', severity: 'error', comment: 'a destination knows where rows go, not how runs are made', from: { path: '^src/destinations/' }, to: { path: '^src/(jobs|commands)/' } },
    { name: 'fs-at-the-bottom', severity: 'error', comment: 'files, locks and atomic writes serve every layer', from: { path: '^src/fs/' }, to: { path: '^src/(engine|destinations|commands|export|api|auth|report|io)/' } },
    { name: 'load-below-destinations', severity: 'error', comment: 'a database engine knows tables, not destinations or runs', from: { path: '^src/load/' }, to: { path: '^src/(engine|destinations|commands)/' } },
    { name: 'factory-above-the-rooms', severity: 'error', comment: 'below the commands, a module takes the Context (context.ts) or the engine\'s deps (engine/deps.ts), never the factory', from: { path: '^src/((engine|io|report|api|fs|load|auth|export|destinations|fleet|sandbox|completion)/|(errors|duration|suggest|paths|host|context|paris|paris-zone|lazy|clock|gc)\\.ts$)' }, to: { path: '^src/factory\\.ts$' } },
    { name: 'no-command-imports-another', severity: 'error', comment: 'what two commands share lives below them (the engine\'s prepareRun, for run and jobs)', from: { path: '^src/commands/([^/]+)\\.ts$' }, to: { path: '^src/commands/', pathNot: '^src/commands/$1\\.ts$' } },
    { name: 'fleet-above-engine', severity: 'error', comment: 'the job files (reporting jobs) run jobs through the engine; the engine and what is below it know nothing of them', from: { path: '^src/(engine|destinations|load|report|export|api|auth|io|fs)/' }, to: { path: '^src/fleet/' } },
    { name: 'report-below-engine', severity: 'error', comment: 'what a report request is knows nothing of how runs are made', from: { path: '^src/(report|api|export)/' }, to: { path: '^src/(engine|destinations|commands)/' } },
  ],
  options: {
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules)/' },
    moduleSystems: ['es6'],
  },
};
