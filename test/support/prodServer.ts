import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { SEARCH_ATTRIBUTE_NAMES, freePort } from '../../dev/server';
import { dynamicConfigYaml, membershipPort, serverConfigYaml } from './prodServerConfig';
import { installProdServer, run, SERVER, SERVER_VERSION, SQL_TOOL, type Log } from './prodServerInstall';

export { SERVER_VERSION };

// `npm run test:prod`: a production-shaped Temporal server instead of the dev server. The server's Go
// module at a pinned release, built here, with PostgreSQL for persistence and SQL visibility; a private
// database cluster and server per run, on free ports, removed on stop.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ProdServer {
  address: string;
  dir: string;
  serverLog: string;
  /** Server (SIGTERM), then PostgreSQL (fast shutdown), then the run's directory; idempotent. */
  stop(): Promise<void>;
}

/** Ends a child: `signal`, then SIGKILL after `graceMs`. */
async function end(child: ChildProcess, signal: NodeJS.Signals, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Polls `check` until it returns true; throws `what` with the last error after `timeoutMs`, or at once if `dead()` says why. */
async function until(
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
  dead: () => string | undefined = () => undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    const why = dead();
    if (why) throw new Error(`${what}: ${why}`);
    try {
      if (await check()) return;
    } catch (err) {
      last = (err as Error).message.split('\n')[0]!;
    }
    await sleep(100);
  }
  throw new Error(`${what} not within ${timeoutMs / 1000} s${last ? `: ${last}` : ''}`);
}

/**
 * PostgreSQL cluster, schemas, server, namespace `default` with the project's search attributes.
 * `timings` gets the milliseconds of each phase. A normal exit of this process SIGKILLs the children; a
 * SIGKILLed process leaves them running, so callers stop() (as with the dev server).
 */
export async function startProdServer(
  opts: { keep?: boolean; log?: Log; timings?: Record<string, number> } = {},
): Promise<ProdServer> {
  const log = opts.log ?? console.error;
  const { pgBin } = installProdServer(log);
  const mark = (phase: string, since: number) => opts.timings && (opts.timings[phase] = Date.now() - since);
  const dir = fs.mkdtempSync(join(tmpdir(), 'openworker-prod-'));
  const pgData = join(dir, 'pg');
  const children: ChildProcess[] = [];
  const killAll = () => children.forEach((c) => c.kill('SIGKILL'));
  process.once('exit', killAll);
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      const [pg, server] = children;
      if (server) await end(server, 'SIGTERM', 20_000);
      if (pg) await end(pg, 'SIGINT', 10_000); // fast shutdown: no wait for clients
      process.removeListener('exit', killAll);
      if (!opts.keep) fs.rmSync(dir, { recursive: true, force: true });
    })());
  try {
    // initdb refuses root: as root, the cluster belongs to Debian's `postgres` user.
    const asRoot = process.getuid?.() === 0;
    const owner = asRoot
      ? { uid: Number(run('id', ['-u', 'postgres'])), gid: Number(run('id', ['-g', 'postgres'])) }
      : {};
    fs.chmodSync(dir, 0o711);
    fs.mkdirSync(pgData, { mode: 0o700 });
    if (asRoot) fs.chownSync(pgData, owner.uid!, owner.gid!);
    let t = Date.now();
    // Trust on 127.0.0.1 and the socket: the cluster lives for one run, on a loopback port.
    run(
      join(pgBin, 'initdb'),
      ['-D', pgData, '-U', 'temporal', '--auth=trust', '-E', 'UTF8', '--no-instructions'],
      owner,
    );
    const pgPort = await freePort();
    const pgLog = fs.openSync(join(dir, 'postgres.log'), 'a');
    const pgArgs = ['-D', pgData, '-p', String(pgPort), '-k', pgData, '-c', 'listen_addresses=127.0.0.1'];
    children.push(
      spawn(join(pgBin, 'postgres'), [...pgArgs, '-c', 'max_connections=200'], {
        ...owner,
        stdio: ['ignore', pgLog, pgLog],
      }),
    );
    fs.closeSync(pgLog);
    const pgReady = () =>
      spawnSync(join(pgBin, 'pg_isready'), ['-q', '-h', '127.0.0.1', '-p', String(pgPort)]).status === 0;
    const pgDead = () => (children[0]!.exitCode === null ? undefined : `postgres exited with ${children[0]!.exitCode}`);
    await until(
      `PostgreSQL on 127.0.0.1:${pgPort} (log ${join(dir, 'postgres.log')})`,
      30_000,
      async () => pgReady(),
      pgDead,
    );
    mark('postgres', t);

    t = Date.now();
    const conn = `--ep 127.0.0.1 -p ${pgPort} -u temporal --pl postgres12`.split(' ');
    const sqlTool = (db: string, ...args: string[]) => run(SQL_TOOL, [...conn, '--db', db, ...args]);
    for (const [db, schema] of [
      ['temporal', 'temporal'],
      ['temporal_visibility', 'visibility'],
    ] as const) {
      sqlTool(db, 'create-database');
      sqlTool(db, 'setup-schema', '-v', '0.0');
      sqlTool(db, 'update-schema', '--schema-name', `postgresql/v12/${schema}`);
    }
    mark('schema', t);

    t = Date.now();
    const ports: Record<string, [number, number]> = {};
    for (const name of ['frontend', 'history', 'matching', 'worker'])
      ports[name] = [await freePort(), await membershipPort()];
    const dynamicConfig = join(dir, 'dynamicconfig.yaml');
    fs.writeFileSync(dynamicConfig, dynamicConfigYaml());
    const configFile = join(dir, 'server.yaml');
    fs.writeFileSync(configFile, serverConfigYaml(pgPort, ports, dynamicConfig));
    const serverLog = join(dir, 'server.log');
    const fd = fs.openSync(serverLog, 'a');
    children.push(
      spawn(SERVER, ['--config-file', configFile, '--allow-no-auth', 'start'], { stdio: ['ignore', fd, fd] }),
    );
    fs.closeSync(fd);
    const address = `127.0.0.1:${ports.frontend![0]}`;
    const client = await connectWhenUp(address, serverLog, children[1]!);
    mark('server', t);

    t = Date.now();
    try {
      await registerDefault(client);
    } finally {
      await client.close();
    }
    mark('namespace', t);
    return { address, dir, serverLog, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function connectWhenUp(address: string, serverLog: string, server: ChildProcess): Promise<Connection> {
  let conn: Connection | undefined;
  const dead = () => (server.exitCode === null ? undefined : `the server exited with ${server.exitCode}`);
  await until(
    `Temporal frontend at ${address} (log ${serverLog})`,
    60_000,
    async () => {
      conn ??= await Connection.connect({ address, connectTimeout: 1000 });
      await conn.workflowService.getSystemInfo({});
      return true;
    },
    dead,
  ).catch(async (err) => {
    await conn?.close().catch(() => undefined);
    throw err;
  });
  return conn!;
}

/**
 * What `temporal server start-dev --namespace default --search-attribute …` does, by API. The frontend
 * learns of a new namespace at its next namespace-cache refresh, so "ready" means a visibility query on it works.
 */
async function registerDefault(conn: Connection): Promise<void> {
  const namespace = 'default';
  await conn.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') });
  await until(`namespace ${namespace}`, 30_000, async () => {
    await conn.workflowService.listWorkflowExecutions({ namespace, pageSize: 1 });
    return true;
  });
  const keyword = temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD;
  await conn.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(SEARCH_ATTRIBUTE_NAMES.map((n) => [n, keyword])),
  });
  await until(`search attributes ${SEARCH_ATTRIBUTE_NAMES.join(', ')}`, 30_000, async () => {
    const { customAttributes = {} } = await conn.operatorService.listSearchAttributes({ namespace });
    return SEARCH_ATTRIBUTE_NAMES.every((n) => n in customAttributes);
  });
}
