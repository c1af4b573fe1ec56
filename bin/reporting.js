#!/usr/bin/env node
import('../dist/main.js').then((entry) => entry.main(process.argv));
