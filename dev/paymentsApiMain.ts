/**
 * Runs the payments API fake as its own process, so that it survives (or dies) independently of the worker
 * that calls it — a real external system for crash tests.
 *
 *   node dist/dev/paymentsApiMain.js [--port N] [--retention-ms N] [--exit-with-stdin]
 *
 * Each flag falls back to PAYMENTS_API_PORT / PAYMENTS_API_RETENTION_MS. Prints one JSON line {"url","port"} on
 * stdout when ready, then one line per barrier (`PAYMENTS committed <key>`, `PAYMENTS hanging <key>`, …; `-` when
 * there is no key). SIGTERM/SIGINT close it. `--exit-with-stdin` also closes it when stdin ends, so a test runner
 * that dies without cleaning up (SIGKILL) leaves no orphan behind. Loopback only.
 */
import { integerFlag, parseFlags, runFake } from './mainArgs';
import { startPaymentsApi } from './paymentsApi';

const FLAGS: Record<string, string | undefined> = {
  '--port': 'PAYMENTS_API_PORT',
  '--retention-ms': 'PAYMENTS_API_RETENTION_MS',
  '--exit-with-stdin': undefined,
};

const integer = (value: string | undefined, flag: string, max: number) => integerFlag(FLAGS, value, flag, max);

runFake('payments API', 'PAYMENTS', async () => {
  const args = parseFlags(FLAGS, process.argv.slice(2), process.env);
  const api = await startPaymentsApi({
    port: integer(args['--port'], '--port', 65535) ?? 0,
    retentionMs: integer(args['--retention-ms'], '--retention-ms', Number.MAX_SAFE_INTEGER),
  });
  return { fake: api, ready: { url: api.url, port: api.port }, exitWithStdin: !!args['--exit-with-stdin'] };
});
