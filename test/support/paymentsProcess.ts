import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { Fault, Ledger } from '../../dev/paymentsApi';

/**
 * The payments API fake as a separate process (dev/paymentsApiMain), for crash tests: it keeps running while a
 * worker is killed. Tests wait on its barrier lines (`PAYMENTS committed <key>`), never on a sleep.
 *
 * It is not tracked by `stopAllProcesses` (test/support/processes.ts): call `stop()` in an `after`/`afterEach`
 * hook. As a safety net, every process still running when the test process exits is SIGKILLed, and the child
 * closes by itself when its stdin (a pipe from this process) ends.
 */

const MAIN = join(__dirname, '..', '..', 'dev', 'paymentsApiMain.js');
const live = new Set<ChildProcess>();
process.once('exit', () => live.forEach((p) => p.kill('SIGKILL')));

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

function exited(proc: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve({ code: proc.exitCode, signal: proc.signalCode });
  return new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
}

export async function startPaymentsProcess(opts: PaymentsProcessOptions = {}): Promise<PaymentsProcess> {
  const args = [MAIN, '--exit-with-stdin', ...(opts.retentionMs === undefined ? [] : ['--retention-ms', String(opts.retentionMs)])];
  const proc = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  live.add(proc);
  proc.once('exit', () => live.delete(proc));
  let out = '';
  const listeners = new Set<() => void>(); // pending waits, woken on each chunk of stdout
  const lines: string[] = [];
  let partial = '';
  proc.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    const parts = (partial + d).split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
    listeners.forEach((l) => l());
  });
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));

  /** Re-runs `find` on each new output until it matches, the process exits, or the time is up. */
  const until = <T>(find: () => T | undefined, what: string, timeoutMs: number): Promise<T> =>
    new Promise((resolve, reject) => {
      const fail = (why: string) => new Error(`payments process: ${what}: ${why}; output:\n${out.slice(-2000)}`);
      const finish = (settle: () => void) => {
        clearTimeout(timer);
        listeners.delete(check);
        proc.off('exit', onExit);
        settle();
      };
      const check = () => {
        const v = find();
        if (v !== undefined) finish(() => resolve(v));
      };
      const onExit = () => finish(() => {
        const v = find(); // the line may have come with the last chunk
        if (v !== undefined) resolve(v);
        else reject(fail('the process exited first'));
      });
      const timer = setTimeout(() => finish(() => reject(fail(`not seen within ${timeoutMs} ms`))), timeoutMs);
      listeners.add(check);
      proc.once('exit', onExit);
      check();
      if (proc.exitCode !== null || proc.signalCode !== null) onExit(); // exited before this wait began
    });

  let url: string;
  try {
    const ready = await until(() => lines.find((l) => l.startsWith('{')), 'ready line', opts.startTimeoutMs ?? 10_000);
    url = (JSON.parse(ready) as { url: string }).url;
  } catch (err) {
    proc.kill('SIGKILL');
    throw err;
  }

  const control = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const res = await fetch(`${url}/_control/${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(5_000),
    });
    const json = (await res.json()) as { error?: string };
    if (!res.ok) throw new Error(`payments process: ${method} /_control/${path}: HTTP ${res.status}: ${json.error ?? ''}`);
    return json;
  };

  return {
    proc,
    url,
    output: () => out,
    waitFor: async (event, key, timeoutMs = 10_000, occurrence = 1) => {
      const want = key === undefined ? (l: string) => l.startsWith(`PAYMENTS ${event} `) : (l: string) => l === `PAYMENTS ${event} ${key}`;
      const what = `"PAYMENTS ${event}${key === undefined ? '' : ` ${key}`}"${occurrence > 1 ? ` #${occurrence}` : ''}`;
      await until(() => (lines.filter(want).length >= occurrence ? true : undefined), what, timeoutMs);
    },
    arm: async (fault) => void (await control('POST', 'faults', fault)),
    disarm: async () => void (await control('DELETE', 'faults')),
    release: async (key) => ((await control('POST', 'release', key === undefined ? {} : { key })) as { released: number }).released,
    advanceClock: async (ms) => void (await control('POST', 'clock', { advanceMs: ms })),
    reset: async () => void (await control('POST', 'reset')),
    ledger: async () => (await control('GET', 'ledger')) as Ledger,
    stop: async (timeoutMs = 5_000) => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
      try {
        return await exited(proc);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
