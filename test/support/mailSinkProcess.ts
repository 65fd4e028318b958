import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { normalizeMessageId, type Fault, type Ledger } from '../../dev/mailSink';
import { startFakeProcess } from './fakeProcess';

/** The mail sink as a separate process (dev/mailSinkMain): see test/support/fakeProcess.ts. */

const MAIN = join(__dirname, '..', '..', 'dev', 'mailSinkMain.js');

export interface MailSinkProcessOptions {
  /** JSON file that keeps the messages across restarts of the sink. */
  file?: string;
  /** Bound on the wait for the ready line (default 10 s). */
  startTimeoutMs?: number;
}

export interface MailSinkProcess {
  proc: ChildProcess;
  smtpPort: number;
  httpPort: number;
  lookupUrl: string;
  /** Everything the process printed (stdout and stderr). */
  output(): string;
  /** Resolves when the `occurrence`-th `MAILSINK <event> [messageId]` line has been printed (lines already printed count). */
  waitFor(event: string, messageId?: string, timeoutMs?: number, occurrence?: number): Promise<void>;
  arm(fault: Fault): Promise<void>;
  disarm(): Promise<void>;
  release(messageId?: string): Promise<number>;
  reset(): Promise<void>;
  ledger(): Promise<Ledger>;
  /** Deliveries recorded for `messageId`, through the lookup API. */
  deliveries(messageId: string): Promise<number>;
  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves with how it exited. */
  stop(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export async function startMailSinkProcess(opts: MailSinkProcessOptions = {}): Promise<MailSinkProcess> {
  // MAIL_SINK_* from the environment must not override what the test asked for.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MAIL_SINK_')));
  const fake = await startFakeProcess<{ smtpPort: number; httpPort: number; lookupUrl: string }>({
    name: 'mail sink process',
    main: MAIN,
    args: ['--smtp-port', '0', '--http-port', '0', ...(opts.file === undefined ? [] : ['--file', opts.file])],
    env,
    prefix: 'MAILSINK',
    controlBase: (ready) => ready.lookupUrl.replace(/\/messages$/, ''),
    normalizeKey: normalizeMessageId,
    ...(opts.startTimeoutMs ? { startTimeoutMs: opts.startTimeoutMs } : {}),
  });
  const { control, ready } = fake;
  return {
    proc: fake.proc,
    ...ready,
    output: fake.output,
    waitFor: fake.waitFor,
    arm: async (fault) => void (await control('POST', 'faults', fault)),
    disarm: async () => void (await control('DELETE', 'faults')),
    release: async (messageId) =>
      ((await control('POST', 'release', messageId === undefined ? {} : { messageId })) as { released: number })
        .released,
    reset: async () => void (await control('POST', 'reset')),
    ledger: async () => (await control('GET', 'ledger')) as Ledger,
    deliveries: async (messageId) => {
      const res = await fetch(`${ready.lookupUrl}/${encodeURIComponent(messageId)}`, {
        signal: AbortSignal.timeout(5_000),
      });
      const body = (await res.json()) as { delivered?: boolean; count?: number };
      if (res.status === 404 && body.delivered === false) return 0;
      if (res.status !== 200 || typeof body.count !== 'number')
        throw new Error(`mail sink process: lookup of ${messageId} answered ${res.status}`);
      return body.count;
    },
    stop: fake.stop,
  };
}
