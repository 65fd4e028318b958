#!/usr/bin/env node
'use strict';
let cli;
try {
  cli = require('../dist/cli/main.js');
} catch (err) {
  if (err && err.code === 'MODULE_NOT_FOUND') {
    console.error(
      'error: openworker-temporal is not built; run `npm install` (or `npm run build`) in the project first',
    );
    process.exit(1);
  }
  throw err;
}
cli.main();
