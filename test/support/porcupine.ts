import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT } from './processes';

/**
 * The independent checker (checker/porcupine, a Go program using Porcupine), built once per test
 * process into .openworker/ (Go's build cache makes a rebuild about a second; the first build fetches
 * the module pinned by go.sum through the Go module proxy).
 */

export const CHECKER_DIR = join(ROOT, 'checker', 'porcupine');
const BINARY = join(ROOT, '.openworker', 'porcupine-check');
const run = promisify(execFile);

function goCommand(): string {
  for (const go of [process.env.GO, 'go', '/usr/local/go/bin/go', '/usr/lib/go/bin/go'])
    if (go && (go === 'go' ? isOnPath('go') : existsSync(go))) return go;
  throw new Error('the independent checker needs Go ≥ 1.19 on PATH: install it (Debian: apt-get install golang)');
}

const isOnPath = (cmd: string): boolean =>
  (process.env.PATH ?? '').split(':').some((d) => d && existsSync(join(d, cmd)));

/** Go's environment for our runs: the module download through the proxy, never a toolchain download. */
const goEnv = (): NodeJS.ProcessEnv => ({ ...process.env, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly' });

let built: Promise<string> | undefined;
/** The checker's binary, built on first use. */
export function porcupineChecker(): Promise<string> {
  built ??= (async () => {
    const go = goCommand();
    mkdirSync(dirname(BINARY), { recursive: true });
    await run(go, ['build', '-o', BINARY, '.'], { cwd: CHECKER_DIR, env: goEnv(), timeout: 300_000 });
    return BINARY;
  })();
  return built;
}

export interface CheckerRun {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs the checker on history files or directories; exit 0 = legal, 1 = a violation, 2 = unreadable. */
export async function runPorcupine(paths: string[], vizDir?: string): Promise<CheckerRun> {
  const bin = await porcupineChecker();
  const started = Date.now();
  const args = [...(vizDir ? ['-viz', vizDir] : []), ...paths];
  try {
    const { stdout, stderr } = await run(bin, args, { timeout: 120_000, maxBuffer: 16 << 20 });
    return { code: 0, stdout, stderr, ms: Date.now() - started };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string; message: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout ?? '', stderr: e.stderr ?? e.message, ms: Date.now() - started };
  }
}

/** `go test` of the checker itself (its model against crafted histories). */
export async function goTestPorcupine(): Promise<string> {
  try {
    const { stdout } = await run(goCommand(), ['test', '-count=1', './...'], {
      cwd: CHECKER_DIR,
      env: goEnv(),
      timeout: 300_000,
    });
    return stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`go test of checker/porcupine failed:\n${e.stdout ?? ''}${e.stderr ?? e.message}`);
  }
}
