/**
 * Runs the mail sink as its own process (the demo and the tests spawn it so that it survives,
 * or dies, independently of the worker).
 *
 *   node dist/dev/mailSinkMain.js [--host H] [--smtp-port N] [--http-port N] [--file PATH] [--exit-with-stdin]
 *
 * Each flag falls back to MAIL_SINK_HOST / MAIL_SINK_SMTP_PORT / MAIL_SINK_HTTP_PORT / MAIL_SINK_FILE.
 * Prints one JSON line {"smtpPort","httpPort","lookupUrl"} on stdout when ready, then one line per barrier
 * (`MAILSINK stored <messageId>`, `MAILSINK holding <messageId>`, …; `-` when there is no Message-ID). Faults are
 * armed at runtime through the loopback `/_control` API on the HTTP port. SIGTERM/SIGINT close it.
 * `--exit-with-stdin` also closes it when stdin ends, so a test runner that dies without cleaning up (SIGKILL)
 * leaves no orphan behind.
 */
import { startMailSink } from './mailSink';

const FLAGS: Record<string, string | undefined> = {
  '--host': 'MAIL_SINK_HOST',
  '--smtp-port': 'MAIL_SINK_SMTP_PORT',
  '--http-port': 'MAIL_SINK_HTTP_PORT',
  '--file': 'MAIL_SINK_FILE',
  '--exit-with-stdin': undefined,
};

function parseArgs(argv: string[], env: NodeJS.ProcessEnv): Record<string, string | undefined> {
  const values: Record<string, string | undefined> = {};
  for (const [flag, name] of Object.entries(FLAGS)) values[flag] = name ? env[name] || undefined : undefined;
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    if (!(flag in FLAGS)) throw new Error(`unknown argument ${JSON.stringify(argv[i])}; expected ${Object.keys(FLAGS).join(', ')}`);
    if (!FLAGS[flag]) {
      values[flag] = 'true'; // a switch, takes no value
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    values[flag] = value;
  }
  return values;
}

function port(value: string | undefined, flag: string): number {
  if (value === undefined) return 0;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > 65535) throw new Error(`${flag} (${FLAGS[flag]}) must be a port number 0-65535, got ${JSON.stringify(value)}`);
  return n;
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2), process.env);
  const sink = await startMailSink({
    host: args['--host'],
    smtpPort: port(args['--smtp-port'], '--smtp-port'),
    httpPort: port(args['--http-port'], '--http-port'),
    file: args['--file'],
  });
  // Barrier lines go out in the order they happen; a test waits for them instead of sleeping.
  sink.events.on('barrier', (name: string, messageId: string) => process.stdout.write(`MAILSINK ${name} ${messageId}\n`));
  let stopping = false;
  const stop = (why: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`mail sink: ${why}, closing\n`);
    sink.close().then(
      () => process.exit(0),
      (err: Error) => {
        process.stderr.write(`mail sink: close failed: ${err.message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  if (args['--exit-with-stdin']) process.stdin.on('end', () => stop('stdin closed')).resume();
  process.stdout.write(JSON.stringify({ smtpPort: sink.smtpPort, httpPort: sink.httpPort, lookupUrl: sink.lookupUrl }) + '\n');
}

main().catch((err: Error) => {
  process.stderr.write(`mail sink: ${err.message.replace(/^mail sink: /, '')}\n`);
  process.exit(1);
});
