import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { FAULT_REPORT_PREFIX } from '../activities/faults';

// Benchmark worker processes: started, watched for the fault points they report, measured, killed.

export interface BenchWorker {
  proc: ChildProcess;
  pid: number;
  /** The Temporal worker identity, as history events record it. */
  identity: string;
  /** Resolves with the execution ID at the next `OPENWORKER_FAULT <point>` line this worker prints. */
  nextFault(point: string): Promise<string>;
  exited: Promise<void>;
}

export interface WorkerSpec {
  system: 'b1' | 'b2' | 'b3' | 'prim';
  taskQueue: string;
  maxCachedWorkflows?: number;
  env?: Record<string, string>;
}

export function startBenchWorker(spec: WorkerSpec): Promise<BenchWorker> {
  const args = [
    join(__dirname, 'worker.js'),
    spec.system,
    spec.taskQueue,
    ...(spec.maxCachedWorkflows !== undefined ? [String(spec.maxCachedWorkflows)] : []),
  ];
  const proc = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...spec.env },
  });
  const waiters: { point: string; resolve: (id: string) => void }[] = [];
  createInterface({ input: proc.stderr! }).on('line', (line) => {
    if (!line.startsWith(FAULT_REPORT_PREFIX)) return void process.stderr.write(`${line}\n`);
    const [, point, executionId] = line.split(' ');
    const i = waiters.findIndex((w) => w.point === point);
    if (i >= 0) waiters.splice(i, 1)[0]!.resolve(executionId!);
  });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`bench worker ${spec.system} did not start within 60 s`)), 60_000);
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      if (line !== 'BENCH_WORKER_READY') return;
      clearTimeout(timer);
      resolve({
        proc,
        pid: proc.pid!,
        identity: `bench-${spec.system}-${proc.pid}`,
        nextFault: (point) => new Promise((r) => waiters.push({ point, resolve: r })),
        exited,
      });
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`bench worker ${spec.system} exited (${code})`));
    });
  });
}

/** SIGKILL and wait for the process to be gone. */
export async function killHard(w: BenchWorker): Promise<void> {
  w.proc.kill('SIGKILL');
  await w.exited;
}

/** Resident set size, MiB (VmRSS from /proc). */
export function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Sums and counts of the SDK's latency histograms, from a worker's Prometheus endpoint. */
export async function scrapeHistograms(
  port: number,
  names: readonly string[],
): Promise<Record<string, { sum: number; count: number }>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const out: Record<string, { sum: number; count: number }> = {};
  for (const name of names) {
    const total = (suffix: string) =>
      text
        .split('\n')
        .filter((l) => l.startsWith(`${name}${suffix}`))
        .reduce((acc, l) => acc + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    out[name] = { sum: total('_sum'), count: total('_count') };
  }
  return out;
}
