import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { ROOT } from './processes';

// A consumer project: a fresh npm project that installed this package's packed tarball (`npm pack`
// of the current build) as a dependency, as a user does. Its scripts and `npx openworker-temporal`
// resolve the package through node_modules and its `exports`, never through this checkout.
// One install per test process, shared by every caller; removed when the process exits.

export type Env = Record<string, string | undefined>;

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface ConsumerProcess {
  proc: ChildProcess;
  /** Resolves when the process exits (its group is then SIGKILLed). */
  exited: Promise<Run>;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match in stdout + stderr; rejects on exit or after timeoutMs. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** `signal` to its process group, then SIGKILL after graceMs; resolves with how it ended. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<Run>;
}

export interface ConsumerProject {
  dir: string;
  tarball: string;
  /** Writes a file into the project (e.g. a script or a workflows module) and returns its path. */
  write(name: string, text: string): string;
  /** `node <script> [...args]` in the project (script relative to dir); SIGKILLed after timeoutMs. */
  run(script: string, env?: Env, opts?: { args?: string[]; timeoutMs?: number }): Promise<Run>;
  /** Any command in the project, bounded the same way (e.g. `npx openworker-temporal --help`). */
  exec(command: string, args: string[], env?: Env, opts?: { timeoutMs?: number }): Promise<Run>;
  /** A long-running command (e.g. `npx openworker-temporal server`); the caller stops it. */
  start(command: string, args: string[], env?: Env): ConsumerProcess;
}

/** npm's lowercase npm_* variables that a consumer's own shell could have; npm run sets the others for this repo. */
const NPM_KEEP = new Set(['npm_config_cache', 'npm_config_userconfig', 'npm_config_globalconfig', 'npm_config_cafile']);

/**
 * A user's environment: this process's, without the tests' OPENWORKER_* and TEMPORAL_* settings and
 * without what `npm test` sets for this repository (npm_config_local_prefix would install into it).
 */
export function consumerEnv(extra: Env = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^(OPENWORKER_|TEMPORAL_)/.test(k) || (k.startsWith('npm_') && !NPM_KEEP.has(k))) continue;
    env[k] = v;
  }
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

// Process groups started here (npx → node → temporal): all killed if the test process exits first.
const groups = new Set<ChildProcess>();
const killGroup = (p: ChildProcess, signal: NodeJS.Signals) => {
  try {
    process.kill(-p.pid!, signal);
  } catch {
    // already gone
  }
};
process.once('exit', () => groups.forEach((p) => killGroup(p, 'SIGKILL')));

function startIn(cwd: string, command: string, args: string[], env: Env): ConsumerProcess {
  // detached: its own process group, so a stop reaches npx's children (the CLI and its Temporal server).
  const proc = spawn(command, args, { cwd, env: consumerEnv(env), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  groups.add(proc);
  let stdout = '';
  let stderr = '';
  proc.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  proc.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const ended = new Promise<Run>((resolve) => {
    const done = (code: number | null, signal: NodeJS.Signals | null) => {
      groups.delete(proc);
      // The group may outlive its leader (e.g. a server the CLI started): never leave it running.
      killGroup(proc, 'SIGKILL');
      resolve({ code, signal, stdout, stderr });
    };
    proc.once('exit', done);
    proc.once('error', (err) => {
      stderr += String(err);
      done(null, null);
    });
  });
  const what = `${command} ${args.join(' ')}`;
  return {
    proc,
    exited: ended,
    stdout: () => stdout,
    stderr: () => stderr,
    waitFor: (pattern, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const timer = setInterval(() => {
          const m = (stdout + stderr).match(pattern);
          if (m) finish(() => resolve(m));
          else if (Date.now() > deadline)
            finish(() =>
              reject(new Error(`${what}: ${pattern} not seen within ${timeoutMs} ms\n${stdout}\n${stderr}`)),
            );
        }, 50);
        const deadline = Date.now() + timeoutMs;
        const finish = (then: () => void) => {
          clearInterval(timer);
          then();
        };
        void ended.then((r) => {
          const m = (r.stdout + r.stderr).match(pattern);
          finish(() =>
            m
              ? resolve(m)
              : reject(
                  new Error(`${what}: exited (${r.code ?? r.signal}) before ${pattern}\n${r.stdout}\n${r.stderr}`),
                ),
          );
        });
      }),
    async stop(signal = 'SIGINT', graceMs = 15_000) {
      if (proc.exitCode === null && proc.signalCode === null) killGroup(proc, signal);
      const timer = setTimeout(() => killGroup(proc, 'SIGKILL'), graceMs);
      const r = await ended;
      clearTimeout(timer);
      return r;
    },
  };
}

async function bounded(p: ConsumerProcess, timeoutMs: number): Promise<Run> {
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void p.stop('SIGKILL');
  }, timeoutMs);
  const r = await p.exited.finally(() => clearTimeout(timer));
  if (timedOut) throw new Error(`${p.proc.spawnfile}: no exit within ${timeoutMs} ms\n${r.stdout}\n${r.stderr}`);
  return r;
}

async function install(): Promise<ConsumerProject> {
  const dir = mkdtempSync(join(tmpdir(), 'openworker-consumer-'));
  process.once('exit', () => {
    if (!process.env.OPENWORKER_KEEP_TEST_DATA) rmSync(dir, { recursive: true, force: true });
  });
  const exec = (command: string, args: string[], env: Env = {}, opts: { timeoutMs?: number } = {}) =>
    bounded(startIn(dir, command, args, env), opts.timeoutMs ?? 60_000);
  // The build is current (npm test builds first); --ignore-scripts: `prepare` would rebuild it.
  const packed = await bounded(
    startIn(ROOT, 'npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', dir], {}),
    60_000,
  );
  const name = packed.stdout.trim().split('\n').pop() ?? '';
  if (packed.code !== 0 || !name.endsWith('.tgz'))
    throw new Error(`npm pack failed (${packed.code}):\n${packed.stderr}`);
  const tarball = join(dir, name);
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'consumer', version: '1.0.0', private: true, type: 'module' }),
  );
  // --prefer-offline takes what `npm ci` left in the npm cache: 14 s on 2 cores (22 s from an empty cache).
  const installed = await exec(
    'npm',
    ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund'],
    {},
    { timeoutMs: 240_000 },
  );
  if (installed.code !== 0)
    throw new Error(`npm install ${name} failed (${installed.code}):\n${installed.stderr.slice(-3000)}`);
  return {
    dir,
    tarball,
    write(file, text) {
      const path = isAbsolute(file) ? file : join(dir, file);
      writeFileSync(path, text);
      return path;
    },
    run: (script, env = {}, opts = {}) => exec(process.execPath, [script, ...(opts.args ?? [])], env, opts),
    exec,
    start: (command, args, env = {}) => startIn(dir, command, args, env),
  };
}

let shared: Promise<ConsumerProject> | undefined;

/** The consumer project of this test process (installed on the first call, ~15 s; the caller's hook needs that timeout). */
export function consumerProject(): Promise<ConsumerProject> {
  return (shared ??= install());
}
