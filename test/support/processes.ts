import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { FAULT_REPORT_PREFIX } from '../../activities/faults';
import { skewedClockEnv } from './clockSkew';

// Real worker processes for end-to-end and crash tests. Every process started here is killed
// after each test, whatever happened.

export const ROOT = join(__dirname, '..', '..', '..');
export const CLI = join(ROOT, 'bin', 'openworker-temporal.js');

const live = new Set<ChildProcess>();
// Scoped processes are stopped by their owner; this is only the net for a test process that exits first.
const scoped = new Set<ChildProcess>();
process.once('exit', () => scoped.forEach((p) => p.kill('SIGKILL')));

export interface WorkerProcess {
  proc: ChildProcess;
  output(): string;
  /** Resolves with the execution ID when the worker reports reaching the armed fault point. */
  faultReached(point: string, timeoutMs?: number): Promise<string>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export interface WorkerSpec {
  taskQueue: string;
  model: string;
  tools?: string[];
  /** e.g. 'tool.after_execute@send_email' */
  faults?: string;
  env?: Record<string, string | undefined>;
  extraArgs?: string[];
  /** Track the process here instead of in the set every test's afterEach kills (the caller stops it). */
  scope?: Set<ChildProcess>;
  /** Run the worker with its wall clock this many seconds off true time (test/support/clockSkew.ts). */
  clockSkewSeconds?: number;
  /** A script run instead of `openworker-temporal worker`, taking its flags (a worker of another build). */
  script?: string;
}

function waitFor(
  proc: ChildProcess,
  text: () => string,
  pattern: RegExp,
  what: string,
  timeoutMs: number,
): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    const check = (): boolean => {
      const m = text().match(pattern);
      if (m) {
        cleanup();
        resolve(m);
      }
      return !!m;
    };
    const onExit = (code: number | null, signal: string | null): void => {
      if (check()) return;
      cleanup();
      reject(new Error(`${what}: the process exited (${code ?? signal}) first; output:\n${text().slice(-2000)}`));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`${what}: not seen within ${timeoutMs} ms; output:\n${text().slice(-2000)}`));
    }, timeoutMs);
    const cleanup = (): void => {
      clearTimeout(timer);
      proc.stdout?.off('data', check);
      proc.stderr?.off('data', check);
      proc.off('exit', onExit);
    };
    if (check()) return;
    proc.stdout?.on('data', check);
    proc.stderr?.on('data', check);
    proc.once('exit', onExit);
  });
}

export function exited(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => proc.once('exit', () => resolve()));
}

export async function spawnWorker(spec: WorkerSpec): Promise<WorkerProcess> {
  const args = [
    // A script of its own (test/support/versioning) takes the worker command's flags.
    ...(spec.script ? [] : ['worker']),
    '--task-queue',
    spec.taskQueue,
    '--model',
    spec.model,
    ...(spec.tools ?? []).flatMap((t) => ['--tools', t]),
    ...(spec.extraArgs ?? []),
  ];
  return spawnCliProcess(args, /worker ready/, 'worker ready line', spec, spec.script);
}

/**
 * Any long-running CLI command (`approvals serve`, …) as a tracked process, with the fault points of
 * `spec.faults` armed; resolves once its output matches `ready`.
 */
export async function spawnCliProcess(
  cliArgs: string[],
  ready: RegExp,
  what: string,
  spec: Pick<WorkerSpec, 'faults' | 'env' | 'scope' | 'clockSkewSeconds'>,
  script?: string,
): Promise<WorkerProcess> {
  const args = [script ?? CLI, ...cliArgs];
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...spec.env,
    ...(spec.clockSkewSeconds !== undefined ? skewedClockEnv(spec.clockSkewSeconds) : {}),
    OPENWORKER_FAULTS: spec.faults ?? '',
  };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const proc = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const owner = spec.scope ?? live;
  owner.add(proc);
  proc.once('exit', () => owner.delete(proc));
  if (spec.scope) scoped.add(proc);
  proc.once('exit', () => scoped.delete(proc));
  let out = '';
  proc.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const output = (): string => out;
  // A script of its own is compiled on the fly (bundling its workflows): give it longer.
  await waitFor(proc, output, ready, what, script ? 60_000 : 30_000);
  return {
    proc,
    output,
    async faultReached(point, timeoutMs = 30_000) {
      const re = new RegExp(`${FAULT_REPORT_PREFIX} ${point.replace(/\./g, '\\.')} (\\S+)`);
      const m = await waitFor(proc, output, re, `fault point ${point}`, timeoutMs);
      return m[1]!;
    },
    async kill(signal = 'SIGKILL') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      await exited(proc);
    },
  };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI as a user would; bounded by `timeoutMs`. */
export function runCli(
  args: string[],
  opts: { env?: Record<string, string>; timeoutMs?: number; scope?: Set<ChildProcess> } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, ...args], {
      cwd: ROOT,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const owner = opts.scope ?? live;
    owner.add(proc);
    let stdout = '';
    let stderr = '';
    proc.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    proc.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(
        new Error(
          `openworker-temporal ${args.join(' ')}: no exit within ${opts.timeoutMs ?? 30_000} ms\n${stdout}\n${stderr}`,
        ),
      );
    }, opts.timeoutMs ?? 30_000);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      owner.delete(proc);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Runs independent CLI commands a few at a time (each is a node start, mostly CPU, ~0.7 s), results in
 * order: for tables of refusals that change nothing, so their order cannot matter.
 */
export async function runClis(
  argsList: string[][],
  opts: Parameters<typeof runCli>[1] = {},
  concurrency = 3,
): Promise<CliResult[]> {
  const results: CliResult[] = new Array<CliResult>(argsList.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    for (let i = next++; i < argsList.length; i = next++) results[i] = await runCli(argsList[i]!, opts);
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, argsList.length) }, lane));
  return results;
}

export async function stopAllProcesses(): Promise<void> {
  const procs = [...live];
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  await Promise.all(procs.map(exited));
}
