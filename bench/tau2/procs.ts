import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';

// The processes a tau2 case runs (workers; their MCP servers are the workers' children), watched line
// by line for the fault points they report, and always killed by their case.

export interface Watched {
  proc: ChildProcess;
  output(): string;
  /** The first match of `re` in what the process printed after byte `from` (default: since it started). */
  waitFor(re: RegExp, timeoutMs: number, from?: number): Promise<RegExpMatchArray>;
  kill(): Promise<void>;
}

// Every process started here, for the net below and for stopAll.
const running = new Set<ChildProcess>();
process.once('exit', () => running.forEach((p) => p.kill('SIGKILL')));

/** SIGKILLs every process a case started that still runs (a test timed out while its case ran). */
export async function stopAll(): Promise<void> {
  const procs = [...running];
  procs.forEach((p) => p.kill('SIGKILL'));
  await Promise.all(procs.map(exited));
}

export function exited(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => proc.once('exit', () => resolve()));
}

export async function startWatched(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp,
  live: Set<Watched>,
): Promise<Watched> {
  const proc = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(proc);
  proc.once('exit', () => running.delete(proc));
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (d: string): void => {
    out += d;
    for (const l of [...listeners]) l();
  };
  proc.stdout!.setEncoding('utf8').on('data', onData);
  proc.stderr!.setEncoding('utf8').on('data', onData);
  const w: Watched = {
    proc,
    output: () => out,
    waitFor(re, timeoutMs, from = 0) {
      return new Promise((resolve, reject) => {
        const done = (): void => {
          listeners.delete(check);
          proc.off('exit', onExit);
          clearTimeout(timer);
        };
        const check = (): void => {
          const m = out.slice(from).match(re);
          if (!m) return;
          done();
          resolve(m);
        };
        const onExit = (): void => {
          check();
          if (!listeners.has(check)) return;
          done();
          reject(new Error(`${re} not seen: the process exited; output:\n${out.slice(-2000)}`));
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`${re} not seen within ${timeoutMs} ms; output:\n${out.slice(-2000)}`));
        }, timeoutMs);
        listeners.add(check);
        proc.once('exit', onExit);
        check();
      });
    },
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited(proc);
    },
  };
  live.add(w);
  proc.once('exit', () => live.delete(w));
  await w.waitFor(ready, 60_000);
  return w;
}
