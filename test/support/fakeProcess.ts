import { spawn, type ChildProcess } from 'node:child_process';

/**
 * A fake external system (the payments API, the mail sink) run as its own process for crash tests:
 * it keeps running while a worker is killed. It prints one JSON ready line, then one barrier line per
 * notable moment (`<PREFIX> <event> <key|->`), which tests wait on instead of sleeping. Faults are
 * armed through its loopback `/_control` API.
 *
 * Not tracked by `stopAllProcesses` (test/support/processes.ts): call `stop()` in an `after` hook.
 * As a safety net, every one still running when the test process exits is SIGKILLed, and the child
 * closes by itself when its stdin (a pipe from this process) ends (`--exit-with-stdin`).
 */

const live = new Set<ChildProcess>();
process.once('exit', () => live.forEach((p) => p.kill('SIGKILL')));

export interface FakeProcess<Ready> {
  proc: ChildProcess;
  ready: Ready;
  /** Everything the process printed (stdout and stderr). */
  output(): string;
  /** Resolves when the `occurrence`-th `<PREFIX> <event> [key]` line has been printed (lines already printed count). */
  waitFor(event: string, key?: string, timeoutMs?: number, occurrence?: number): Promise<void>;
  /** Calls `<controlBase>/_control/<path>`; throws with the fake's error on a non-2xx answer. */
  control(method: string, path: string, body?: unknown): Promise<unknown>;
  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves with how it exited. */
  stop(timeoutMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export interface FakeSpec<Ready> {
  name: string;
  main: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  prefix: string;
  /** Where `/_control` lives, from the ready line. */
  controlBase(ready: Ready): string;
  /** How keys are written in barrier lines (e.g. Message-IDs without angle brackets). */
  normalizeKey?(key: string): string;
  startTimeoutMs?: number;
}

function exited(proc: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (proc.exitCode !== null || proc.signalCode !== null)
    return Promise.resolve({ code: proc.exitCode, signal: proc.signalCode });
  return new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
}

export async function startFakeProcess<Ready>(spec: FakeSpec<Ready>): Promise<FakeProcess<Ready>> {
  const proc = spawn(process.execPath, [spec.main, '--exit-with-stdin', ...spec.args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(spec.env ? { env: spec.env } : {}),
  });
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
      const fail = (why: string) => new Error(`${spec.name}: ${what}: ${why}; output:\n${out.slice(-2000)}`);
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
      const onExit = () =>
        finish(() => {
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

  let ready: Ready;
  try {
    ready = JSON.parse(
      await until(() => lines.find((l) => l.startsWith('{')), 'ready line', spec.startTimeoutMs ?? 10_000),
    ) as Ready;
  } catch (err) {
    proc.kill('SIGKILL');
    throw err;
  }
  const base = spec.controlBase(ready);

  return {
    proc,
    ready,
    output: () => out,
    waitFor: async (event, key, timeoutMs = 10_000, occurrence = 1) => {
      const k = key === undefined ? undefined : (spec.normalizeKey?.(key) ?? key);
      const want =
        k === undefined
          ? (l: string) => l.startsWith(`${spec.prefix} ${event} `)
          : (l: string) => l === `${spec.prefix} ${event} ${k}`;
      const what = `"${spec.prefix} ${event}${k === undefined ? '' : ` ${k}`}"${occurrence > 1 ? ` #${occurrence}` : ''}`;
      await until(() => (lines.filter(want).length >= occurrence ? true : undefined), what, timeoutMs);
    },
    control: async (method, path, body) => {
      const res = await fetch(`${base}/_control/${path}`, {
        method,
        headers: { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(5_000),
      });
      const json = (await res.json()) as { error?: string };
      if (!res.ok)
        throw new Error(`${spec.name}: ${method} /_control/${path}: HTTP ${res.status}: ${json.error ?? ''}`);
      return json;
    },
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
