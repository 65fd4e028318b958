import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { Fault, Ledger } from '../../dev/paymentsApi';
import { startFakeProcess } from './fakeProcess';

/** The payments API fake as a separate process (dev/paymentsApiMain): see test/support/fakeProcess.ts. */

const MAIN = join(__dirname, '..', '..', 'dev', 'paymentsApiMain.js');

export interface PaymentsProcessOptions {
  retentionMs?: number;
  /** Bound on the wait for the ready line (default 10 s). */
  startTimeoutMs?: number;
}

export interface PaymentsProcess {
  proc: ChildProcess;
  url: string;
  /** Everything the process printed (stdout and stderr). */
  output(): string;
  /** Resolves when the `occurrence`-th `PAYMENTS <event> [key]` line has been printed (lines already printed count). */
  waitFor(event: string, key?: string, timeoutMs?: number, occurrence?: number): Promise<void>;
  arm(fault: Fault): Promise<void>;
  disarm(): Promise<void>;
  release(key?: string): Promise<number>;
  advanceClock(ms: number): Promise<void>;
  reset(): Promise<void>;
  ledger(): Promise<Ledger>;
  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves with how it exited. */
  stop(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export async function startPaymentsProcess(opts: PaymentsProcessOptions = {}): Promise<PaymentsProcess> {
  const fake = await startFakeProcess<{ url: string }>({
    name: 'payments process',
    main: MAIN,
    args: opts.retentionMs === undefined ? [] : ['--retention-ms', String(opts.retentionMs)],
    prefix: 'PAYMENTS',
    controlBase: (ready) => ready.url,
    ...(opts.startTimeoutMs ? { startTimeoutMs: opts.startTimeoutMs } : {}),
  });
  const { control } = fake;
  return {
    proc: fake.proc,
    url: fake.ready.url,
    output: fake.output,
    waitFor: fake.waitFor,
    arm: async (fault) => void (await control('POST', 'faults', fault)),
    disarm: async () => void (await control('DELETE', 'faults')),
    release: async (key) =>
      ((await control('POST', 'release', key === undefined ? {} : { key })) as { released: number }).released,
    advanceClock: async (ms) => void (await control('POST', 'clock', { advanceMs: ms })),
    reset: async () => void (await control('POST', 'reset')),
    ledger: async () => (await control('GET', 'ledger')) as Ledger,
    stop: fake.stop,
  };
}
