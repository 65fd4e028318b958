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
import { integerFlag, parseFlags, runFake } from './mainArgs';

const FLAGS: Record<string, string | undefined> = {
  '--host': 'MAIL_SINK_HOST',
  '--smtp-port': 'MAIL_SINK_SMTP_PORT',
  '--http-port': 'MAIL_SINK_HTTP_PORT',
  '--file': 'MAIL_SINK_FILE',
  '--exit-with-stdin': undefined,
};

/** A port flag; absent means 0 (a free port). */
const port = (value: string | undefined, flag: string): number => integerFlag(FLAGS, value, flag, 65535) ?? 0;

runFake('mail sink', 'MAILSINK', async () => {
  const args = parseFlags(FLAGS, process.argv.slice(2), process.env);
  const sink = await startMailSink({
    host: args['--host'],
    smtpPort: port(args['--smtp-port'], '--smtp-port'),
    httpPort: port(args['--http-port'], '--http-port'),
    file: args['--file'],
  });
  return {
    fake: sink,
    ready: { smtpPort: sink.smtpPort, httpPort: sink.httpPort, lookupUrl: sink.lookupUrl },
    exitWithStdin: !!args['--exit-with-stdin'],
  };
});
