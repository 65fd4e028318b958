// A production-shaped Temporal server (test/support/prodServer.ts) for one run: builds it if missing, starts
// it on free ports, prints the frontend address and removes everything on exit.
//   node scripts/prod-server.mjs                 serve until SIGINT/SIGTERM
//   node scripts/prod-server.mjs -- CMD ARGS…     run CMD with OPENWORKER_TEST_TEMPORAL_ADDRESS set, exit with its code
// Needs `npm run build` (or tsc) first: it loads dist/test/support/prodServer.js.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { startProdServer, SERVER_VERSION } = require('../dist/test/support/prodServer.js');
const log = (msg) => console.error(`[prod-server] ${msg}`);

const sep = process.argv.indexOf('--');
const command = sep < 0 ? [] : process.argv.slice(sep + 1);
const timings = {};
let server;
try {
  server = await startProdServer({ log, timings, keep: Boolean(process.env.OPENWORKER_KEEP_TEST_DATA) });
} catch (err) {
  log(`could not start: ${err.message}`);
  process.exit(1);
}
const phases = Object.entries(timings).map(([k, ms]) => `${k} ${(ms / 1000).toFixed(1)} s`);
log(`Temporal Server ${SERVER_VERSION} + PostgreSQL at ${server.address} (${phases.join(', ')}); data ${server.dir}`);
console.log(server.address);

let child;
let stopping = false;
const finish = async (code) => {
  if (stopping) return;
  stopping = true;
  const t = Date.now();
  await server.stop();
  log(`stopped in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  process.exit(code);
};
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    // The command gets the signal too (SIGINT from a terminal reaches the whole group; SIGTERM does not).
    if (child && child.exitCode === null) child.kill(signal);
    else void finish(130);
  });
}
if (command.length) {
  child = spawn(command[0], command.slice(1), {
    stdio: 'inherit',
    env: { ...process.env, OPENWORKER_TEST_TEMPORAL_ADDRESS: server.address },
  });
  child.once('error', (err) => {
    log(`cannot run ${command[0]}: ${err.message}`);
    void finish(127);
  });
  child.once('exit', (code, signal) => void finish(code ?? (signal ? 128 : 1)));
}
