/**
 * Runs the mail sink as its own process (the demo and the tests spawn it so that it survives,
 * or dies, independently of the worker).
 *
 *   node dist/dev/mailSinkMain.js [--host H] [--smtp-port N] [--http-port N] [--file PATH]
 *
 * Each flag falls back to MAIL_SINK_HOST / MAIL_SINK_SMTP_PORT / MAIL_SINK_HTTP_PORT / MAIL_SINK_FILE.
 * Prints one JSON line {"smtpPort","httpPort","lookupUrl"} on stdout when ready; SIGTERM/SIGINT close it.
 */
import { startMailSink } from './mailSink';

const FLAGS: Record<string, string> = {
  '--host': 'MAIL_SINK_HOST',
  '--smtp-port': 'MAIL_SINK_SMTP_PORT',
  '--http-port': 'MAIL_SINK_HTTP_PORT',
  '--file': 'MAIL_SINK_FILE',
};

function parseArgs(argv: string[], env: NodeJS.ProcessEnv): Record<string, string | undefined> {
  const values: Record<string, string | undefined> = {};
  for (const [flag, name] of Object.entries(FLAGS)) values[flag] = env[name] || undefined;
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    if (!(flag in FLAGS)) throw new Error(`unknown argument ${JSON.stringify(argv[i])}; expected ${Object.keys(FLAGS).join(', ')}`);
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
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`mail sink: ${signal}, closing\n`);
    sink.close().then(
      () => process.exit(0),
      (err: Error) => {
        process.stderr.write(`mail sink: close failed: ${err.message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.stdout.write(JSON.stringify({ smtpPort: sink.smtpPort, httpPort: sink.httpPort, lookupUrl: sink.lookupUrl }) + '\n');
}

main().catch((err: Error) => {
  process.stderr.write(`mail sink: ${err.message.replace(/^mail sink: /, '')}\n`);
  process.exit(1);
});
