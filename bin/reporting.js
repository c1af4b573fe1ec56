#!/usr/bin/env node
// CommonJS (bin/package.json): --version and --help are answered without starting the ES module loader
if (!require('../dist/quick.cjs').quick(process.argv)) import('../dist/main.js').then((entry) => entry.main(process.argv));
