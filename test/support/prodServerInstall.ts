import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { join } from 'node:path';

// The pieces of `npm run test:prod`'s server that outlive a run: the Temporal Server binaries, built from
// the server's Go module at a pinned release, and Debian's PostgreSQL (test/support/prodServer.ts).

/** Server 1.32, as the dev server (CLI 1.9.1 = Server 1.32.0); v1.32.2 needs Go ≥ 1.26.10 (fetched by GOTOOLCHAIN=auto). */
export const SERVER_VERSION = 'v1.32.2';
const ROOT = join(__dirname, '..', '..', '..');
const HOME = join(ROOT, '.openworker', 'temporal-server');
const BIN = join(HOME, 'bin');
export const SERVER = join(BIN, 'server');
export const SQL_TOOL = join(BIN, 'temporal-sql-tool');
const STAMP = join(HOME, 'VERSION');

export type Log = (msg: string) => void;
/** Runs to completion; a failure is one line: the command and the last line it printed. */
export function run(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; uid?: number; gid?: number } = {},
): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 1_800_000, maxBuffer: 64 << 20, ...opts });
  if (r.status === 0) return r.stdout;
  const last = `${r.stderr ?? ''}${r.stdout ?? ''}`.trim().split('\n').pop() ?? '';
  throw new Error(`${cmd} ${args.join(' ')} failed (${r.error?.message ?? r.status ?? r.signal}): ${last}`);
}

/** The newest PostgreSQL server binaries Debian installed (/usr/lib/postgresql/<major>/bin). */
function pgBinDir(): string | undefined {
  const base = '/usr/lib/postgresql';
  const majors = fs.existsSync(base) ? fs.readdirSync(base).filter((v) => /^\d+$/.test(v)) : [];
  return majors
    .sort((a, b) => Number(b) - Number(a))
    .map((v) => join(base, v, 'bin'))
    .find((d) => fs.existsSync(join(d, 'postgres')));
}

/** Builds the server and schema tool once per pinned version, and installs PostgreSQL through apt if missing. */
export function installProdServer(log: Log = console.error): { pgBin: string } {
  const built = [SERVER, SQL_TOOL, STAMP].every((f) => fs.existsSync(f)) && fs.readFileSync(STAMP, 'utf8').trim();
  if (built !== SERVER_VERSION) {
    if (spawnSync('go', ['version']).status !== 0)
      throw new Error(`building Temporal Server ${SERVER_VERSION} needs Go ≥ 1.26 on PATH`);
    const started = Date.now();
    log(`building Temporal Server ${SERVER_VERSION} and temporal-sql-tool into ${BIN} (minutes, once)`);
    const env = { ...process.env, GOBIN: BIN, GOTOOLCHAIN: process.env.GOTOOLCHAIN ?? 'auto' };
    const pkgs = ['cmd/server', 'cmd/tools/sql'].map((p) => `go.temporal.io/server/${p}@${SERVER_VERSION}`);
    run('go', ['install', ...pkgs], { env });
    fs.renameSync(join(BIN, 'sql'), SQL_TOOL);
    fs.writeFileSync(STAMP, `${SERVER_VERSION}\n`);
    log(`built in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }
  let pgBin = pgBinDir();
  if (!pgBin) {
    if (process.getuid?.() !== 0)
      throw new Error('PostgreSQL is not installed: apt-get install -y postgresql (as root)');
    log('installing PostgreSQL with apt-get');
    run('apt-get', ['install', '-y', '--no-install-recommends', 'postgresql'], {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    pgBin = pgBinDir();
    if (!pgBin) throw new Error('apt-get installed postgresql but no /usr/lib/postgresql/<major>/bin/postgres exists');
  }
  return { pgBin };
}
