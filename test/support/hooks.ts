import { mkdtempSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DevServer } from '../../dev/server';
import { startDevServer } from '../../dev/server';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { writeStamp } from '../../runtime/baseline';
import { stopAllProcesses } from './processes';

// One file-backed Temporal dev server per mocha process: `npm test` runs two files at a time
// (.mocharc.json), each process running files one after another, and parallel mode runs root hooks
// once per file. The server outlives each file, as in a serial run: stopping it under a file's clients
// made their pending calls retry, and a retry firing after the client closed threw outside any test.
// Tests that restart a server start their own.

// The pinned AWS SDK's Node 20 notice is about its 2027 releases; keep it out of every test's output.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

// The test process itself runs only replay workers; keep their lifecycle logs out of the output.
Runtime.install({ logger: new DefaultLogger('WARN') });

let server: DevServer | undefined;
let keepRuntime: NativeConnection | undefined;
let dir: string | undefined;

// In parallel mode a mocha worker that dies is reported only as "terminated unexpectedly", with no
// reason and no file: say both on stderr first (the monitor changes nothing about how errors end).
let currentFile = '';
process.on('uncaughtExceptionMonitor', (err, origin) =>
  writeSync(2, `mocha process ${process.pid} (${currentFile}): ${origin}: ${err?.stack ?? String(err)}\n`),
);
process.on('exit', (code) => {
  if (code !== 0 && process.send) writeSync(2, `mocha process ${process.pid} exits with ${code} (${currentFile})\n`);
});

export function testServer(): DevServer {
  if (!server) throw new Error('the shared dev server is not running (test/support/hooks.js not loaded?)');
  return server;
}

/**
 * OPENWORKER_TEST_TEMPORAL_ADDRESS: a server someone else runs (npm run test:prod). Only `address` is real;
 * stop() leaves it to its owner, and the dev-server fields say so in one line when a test reads them.
 */
function externalServer(address: string): DevServer {
  const devOnly = (field: string) => () => {
    throw new Error(
      `testServer().${field}: this run uses OPENWORKER_TEST_TEMPORAL_ADDRESS=${address}, not a dev server`,
    );
  };
  const server = { address, port: Number(address.split(':').pop()), stop: async () => undefined };
  for (const field of ['dbFile', 'logFile', 'pid', 'cliPath', 'kill', 'exited'])
    Object.defineProperty(server, field, { get: devOnly(field) });
  return server as DevServer;
}

export const mochaHooks = {
  async beforeAll(this: Mocha.Context): Promise<void> {
    this.timeout(90_000);
    const root = this.test?.parent;
    currentFile = root?.suites[0]?.file ?? root?.tests[0]?.file ?? '';
    if (!server) {
      dir = mkdtempSync(join(tmpdir(), 'openworker-test-'));
      const external = process.env.OPENWORKER_TEST_TEMPORAL_ADDRESS;
      server = external
        ? externalServer(external)
        : await startDevServer({ port: 0, headless: true, dbFile: join(dir, 'temporal.db') });
      // The SDK shuts its native runtime down whenever nothing native is left open, and a worker or
      // replay worker created while that shutdown runs fails ("failed to downcast … Runtime"; the
      // matrix's F13 cell did, in a full run, after another file's worker closed). One connection held
      // for the process's life keeps the runtime up; the process's exit ends it.
      keepRuntime ??= await NativeConnection.connect({ address: server.address });
      // This build's state directory from the start: whichever file's worker starts first (after a
      // file wrote tokens there, with sessions open) must not meet the baseline check (runtime/baseline.ts).
      writeStamp(join(dir, 'state'));
      // The server gets SIGTERM when this process exits (dev/server.ts); its files go with it.
      const own = dir;
      if (!process.env.OPENWORKER_KEEP_TEST_DATA)
        process.once('exit', () => rmSync(own, { recursive: true, force: true }));
    }
    // Set again for each file: one that changed them must not move the next file's.
    process.env.TEMPORAL_ADDRESS = server.address;
    process.env.TEMPORAL_NAMESPACE = 'default';
    // Large payloads of this run (and of every worker it spawns) go here, not into the checkout.
    process.env.OPENWORKER_PAYLOAD_STORE = join(dir!, 'payloads');
    // Local state too: a key file that `dev` generated in the checkout must not encrypt the tests'
    // payloads, and no test may write one there. (Set after the server: a downloaded CLI stays cached.)
    process.env.OPENWORKER_STATE_DIR = join(dir!, 'state');
    // Approver keys: a developer's own ~/.openworker/keys would otherwise sign the tests' CLI decisions.
    process.env.OPENWORKER_KEYS_DIR = join(dir!, 'keys');
  },
  async afterEach(this: Mocha.Context): Promise<void> {
    this.timeout(30_000);
    await stopAllProcesses();
  },
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(30_000);
    await stopAllProcesses();
  },
};
