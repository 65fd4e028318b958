import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from '../workflows/definitions';
import type { Settings } from '../runtime/settings';
import { processSettings } from '../runtime/settings';
import { ensureTemporalCli } from './fetchTemporalCli';

/** Search attributes the workflows upsert; registered on every start (re-registering the same type is a no-op). */
export const SEARCH_ATTRIBUTE_NAMES = SEARCH_ATTRIBUTES.map((k) => k.name);

/**
 * Passed as `--dynamic-config-value KEY=JSON`. The dev server silently ignores unknown keys, so only keys
 * checked against Server 1.32 belong here (update-with-start needs no key there: the multi-operation flag is gone).
 */
export const DYNAMIC_CONFIG: Record<string, unknown> = {
  // Approvals and dispatch use workflow updates; explicit so an older server doesn't refuse them.
  'frontend.enableUpdateWorkflowExecution': true,
  // New search attributes must be queryable immediately, not after the cache refresh interval.
  'system.forceSearchAttributesCacheRefreshOnRead': true,
  // A tool activity scheduled by a workflow task goes straight back to the worker that completed
  // it, skipping a matching round trip (npm run bench: B3 p50 296 → 243 ms at N=1).
  'system.enableActivityEagerExecution': true,
  // History reads new transfer, timer and visibility tasks at most 20 times a second per shard by
  // default, and the dev server has one shard: each workflow task waited up to 50 ms to be matched.
  // The readers are woken by new tasks, so a higher cap costs nothing idle (docs/performance.md,
  // "Where a workflow task's time went").
  // List queries (the inbox, the approvals app) per namespace and frontend: the server's default is
  // 10 a second, and a throttled call is retried by the SDK after ~2 s (docs/testing.md, test:prod).
  'frontend.namespaceRPS.visibility': 100,
  'history.transferProcessorMaxPollRPS': 1000,
  'history.timerProcessorMaxPollRPS': 1000,
  'history.visibilityProcessorMaxPollRPS': 1000,
  // Signals one workflow run takes (Temporal's default is 10,000). Each signal stays in history, and a
  // message under 16 KiB is kept inline: 2,000 of the largest keep a session run under Temporal's
  // 50 MiB history limit even while a turn runs and the session cannot continue as new. A flooded
  // turn or session refuses more with a one-line error (docs/guarantees.md, npm run bench:flood).
  'history.maximumSignalsPerExecution': 2000,
  // Worker Deployment Versioning (docs/deploy.md, "Deploying while turns wait"): how often a version
  // that is no longer current checks visibility for open workflows pinned to it, and how long it
  // counts as draining first whatever visibility says (3 min each by default), so `worker deployment
  // describe-version` says DRAINED seconds after the last pinned turn closed, not minutes.
  'matching.wv.VersionDrainageStatusRefreshInterval': '2s',
  'matching.wv.VersionDrainageStatusVisibilityGracePeriod': '5s',
};

export type SqliteSync = 'normal' | 'full';

/**
 * The dev server's SQLite writes go to a write-ahead log. `normal` syncs it to disk at checkpoints, not
 * on every commit: a commit survives any process crash, and the last ones may be lost to a power cut
 * or an OS crash. `full` syncs every commit, at about 10 ms per write on this machine's disk.
 */
export function sqlitePragmas(sync: SqliteSync): string[] {
  return ['--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', `synchronous=${sync}`];
}

export interface DevServerOptions {
  /** SQLite file; default `<state dir>/.openworker/temporal.db` (parent dir is created). */
  dbFile?: string;
  /** gRPC port; default 7233, 0 picks a free port. */
  port?: number;
  /** Web UI port; default port + 1000 (a free port when port is 0). */
  uiPort?: number;
  headless?: boolean;
  ip?: string;
  /** Extra namespace to create besides `default`. */
  namespace?: string;
  /** A codec endpoint the Web UI decodes payloads with (see apps/codecServer.ts). */
  codecEndpoint?: string;
  /** Server stdout/stderr (appended); default `temporal-server.log` next to the db file. */
  logFile?: string;
  readyTimeoutMs?: number;
  /** Serves the server's Prometheus metrics on this loopback port (`npm run bench:breakdown` reads them). */
  metricsPort?: number;
  /** More dynamic config (`KEY: value`), e.g. for benchmark variants. */
  dynamicConfig?: Record<string, unknown>;
  /** Default: OPENWORKER_SERVER_SYNC, else `normal` (see sqlitePragmas); `sqlite-defaults` is for measurements. */
  sqliteSync?: SqliteSync | 'sqlite-defaults';
  /** What the options above default to (state dir, OPENWORKER_SERVER_SYNC, TEMPORAL_CLI_PATH…); default: this process's, read at the start. */
  settings?: Settings;
}

export interface DevServer {
  address: string;
  port: number;
  uiUrl?: string;
  dbFile: string;
  logFile: string;
  pid: number;
  cliPath: string;
  /** SIGTERM, then SIGKILL after 10s; idempotent. Callers must call it: the server outlives a crashed parent. */
  stop(): Promise<void>;
  kill(signal?: NodeJS.Signals): void;
  /** Exit code, or null when killed by a signal. */
  exited: Promise<number | null>;
}

/** A port that was free a moment ago (the usual listen-on-0 race applies). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function readLogTail(file: string, from: number, lines = 20): string {
  try {
    const text = fs.readFileSync(file).subarray(from).toString('utf8');
    return text.trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

function earlyExitError(code: number | null, port: number, logFile: string, tail: string): Error {
  let head = `Temporal dev server exited early with code ${code}`;
  if (/address already in use/.test(tail)) {
    const busy = Number(/:(\d+): bind: address already in use/.exec(tail)?.[1] ?? port);
    const hint = busy === port ? 'pick another with --port' : 'pick another with --ui-port, or use --headless';
    head = `Temporal dev server could not start: port ${busy} is already in use (another server running?); ${hint}`;
  }
  return new Error(`${head}. Log ${logFile}:\n${tail}`);
}

/** Cheap TCP check first: a gRPC connect to a closed port costs a full reconnect backoff (~1s). */
function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port }, () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
    sock.setTimeout(500, () => {
      sock.destroy();
      resolve(false);
    });
  });
}

/** Ready = frontend answers and our search attributes are visible (the CLI registers them just after start). */
async function probe(ip: string, port: number): Promise<'down' | 'no-search-attributes' | 'ready'> {
  if (!(await portOpen(ip, port))) return 'down';
  const address = `${ip}:${port}`;
  let conn: Connection | undefined;
  try {
    conn = await Connection.connect({ address, connectTimeout: 1000 });
    const { customAttributes = {} } = await conn.operatorService.listSearchAttributes({ namespace: 'default' });
    return SEARCH_ATTRIBUTE_NAMES.every((k) => k in customAttributes) ? 'ready' : 'no-search-attributes';
  } catch {
    return 'down';
  } finally {
    await conn?.close().catch(() => undefined);
  }
}

/** The Temporal CLI environment (`temporal env`) that holds the dev server's Web UI settings. */
const UI_ENV = 'openworker-ui';

/**
 * The Web UI's codec endpoint in a Temporal CLI environment file (`--env-file F --env openworker-ui`
 * sets any flag of the command by name), private to this user: 0600 in a fresh 0700 folder. Its
 * token then shows neither in `ps` nor in the server log's command line.
 */
function uiEnvFile(codecEndpoint: string): { file: string; remove(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openworker-ui-'));
  const file = path.join(dir, 'temporal-env.yaml');
  // JSON is YAML: no quoting rules to get wrong.
  fs.writeFileSync(file, `${JSON.stringify({ env: { [UI_ENV]: { 'ui-codec-endpoint': codecEndpoint } } })}\n`, {
    mode: 0o600,
  });
  return { file, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Starts `temporal server start-dev` and resolves once it serves requests. The child is not detached but still
 * survives a parent killed by SIGKILL: always call stop(). A normal parent exit (incl. process.exit) sends SIGTERM.
 */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  // The dev launcher's entry point: its settings are read once, here, unless given.
  const settings = options.settings ?? processSettings();
  const cliPath = await ensureTemporalCli(console.error, settings.env);
  const ip = options.ip ?? '127.0.0.1';
  const port = options.port === 0 ? await freePort() : (options.port ?? 7233);
  const uiPort = options.headless
    ? undefined
    : (options.uiPort ?? (options.port === 0 ? await freePort() : port + 1000));
  const dbFile = path.resolve(options.dbFile ?? path.join(settings.stateDir, 'temporal.db'));
  fs.mkdirSync(path.dirname(dbFile), { recursive: true });
  const logFile = path.resolve(options.logFile ?? path.join(path.dirname(dbFile), 'temporal-server.log'));
  fs.mkdirSync(path.dirname(logFile), { recursive: true });

  // Otherwise the readiness probe would happily talk to whoever already owns the port.
  if (await portOpen(ip, port)) {
    throw new Error(
      `Cannot start Temporal dev server: port ${port} on ${ip} is already in use (another server running?); pick another with --port`,
    );
  }

  const pragmas =
    options.sqliteSync === 'sqlite-defaults' ? [] : sqlitePragmas(options.sqliteSync ?? settings.serverSync);
  const args = ['server', 'start-dev', '--db-filename', dbFile, ...pragmas];
  args.push('--ip', ip, '--port', String(port));
  args.push(...(uiPort === undefined ? ['--headless'] : ['--ui-port', String(uiPort)]));
  // The UI's codec endpoint carries its token: never on the command line (ps shows it to every user).
  const uiEnv = uiPort !== undefined && options.codecEndpoint ? uiEnvFile(options.codecEndpoint) : undefined;
  if (uiEnv) args.push('--env-file', uiEnv.file, '--env', UI_ENV);
  args.push('--namespace', options.namespace ?? 'default');
  for (const name of SEARCH_ATTRIBUTE_NAMES) args.push('--search-attribute', `${name}=Keyword`);
  for (const [key, value] of Object.entries({ ...DYNAMIC_CONFIG, ...options.dynamicConfig })) {
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  }
  if (options.metricsPort !== undefined) args.push('--metrics-port', String(options.metricsPort));
  args.push('--log-level', 'warn');

  // The child writes to the log fd directly, so logging does not depend on this process staying alive.
  const logStart = fs.existsSync(logFile) ? fs.statSync(logFile).size : 0;
  const fd = fs.openSync(logFile, 'a');
  fs.writeSync(fd, `\n# ${new Date().toISOString()} ${cliPath} ${args.join(' ')}\n`);
  const child = spawn(cliPath, args, { stdio: ['ignore', fd, fd], detached: false });
  fs.closeSync(fd);

  const ended = new Promise<{ code: number | null; error?: Error }>((resolve) => {
    child.once('exit', (code) => resolve({ code }));
    child.once('error', (error) => resolve({ code: null, error }));
  });
  const exited = ended.then((e) => e.code);
  const onParentExit = () => child.kill('SIGTERM');
  process.once('exit', onParentExit);
  void exited.then(() => process.removeListener('exit', onParentExit));

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    })());

  const address = `${ip}:${port}`;
  const timeoutMs = options.readyTimeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  let state: Awaited<ReturnType<typeof probe>> = 'down';
  let gaveUp = false;
  const ready = (async () => {
    while (!gaveUp && Date.now() < deadline) {
      if ((state = await probe(ip, port)) === 'ready') return true;
      await sleep(200);
    }
    return false;
  })();
  const outcome = await Promise.race([ready, ended]);
  gaveUp = true;
  // The CLI read its flags at start: the file with the token need not outlive that.
  uiEnv?.remove();
  if (outcome !== true) {
    await stop();
    const tail = readLogTail(logFile, logStart);
    if (outcome === false) {
      const what =
        state === 'down' ? 'not answering' : `missing search attributes ${SEARCH_ATTRIBUTE_NAMES.join(', ')}`;
      throw new Error(`Temporal dev server at ${address} ${what} after ${timeoutMs}ms. Log ${logFile}:\n${tail}`);
    }
    if (outcome.error) throw new Error(`Cannot run Temporal CLI ${cliPath}: ${outcome.error.message}`);
    throw earlyExitError(outcome.code, port, logFile, tail);
  }

  return {
    address,
    port,
    uiUrl: uiPort === undefined ? undefined : `http://localhost:${uiPort}`,
    dbFile,
    logFile,
    pid: child.pid!,
    cliPath,
    stop,
    kill: (signal: NodeJS.Signals = 'SIGTERM') => void child.kill(signal),
    exited,
  };
}
