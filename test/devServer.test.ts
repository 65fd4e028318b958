import { strict as assert } from 'node:assert';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { DevServer, SEARCH_ATTRIBUTE_NAMES, startDevServer } from '../dev/server';
import { resolveTemporalCli } from '../dev/temporalCli';
import { packageRoot } from '../runtime/stateDir';
import { startCodecServer } from '../apps/codecServer';

const logTail = (file: string): string => fs.readFileSync(file, 'utf8').slice(-3000);

// Independent of test/support/hooks.js: own temp db, own ports (port 0).
const stateKey = defineSearchAttributeKey('OpenWorkerState', SearchAttributeType.KEYWORD);

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function withConnection<T>(server: DevServer, fn: (conn: Connection) => Promise<T>): Promise<T> {
  const conn = await Connection.connect({ address: server.address });
  try {
    return await fn(conn);
  } finally {
    await conn.close();
  }
}

async function customSearchAttributes(server: DevServer): Promise<Record<string, unknown>> {
  return withConnection(server, async (conn) => {
    const res = await conn.operatorService.listSearchAttributes({ namespace: 'default' });
    return res.customAttributes ?? {};
  });
}

describe('dev/temporalCli', function () {
  const saved = process.env.TEMPORAL_CLI_PATH;
  afterEach(() => {
    if (saved === undefined) delete process.env.TEMPORAL_CLI_PATH;
    else process.env.TEMPORAL_CLI_PATH = saved;
  });

  it('finds this package root', function () {
    const pkg = JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8'));
    assert.equal(pkg.name, 'openworker-temporal');
  });

  it('resolves an executable Temporal CLI', async function () {
    const cli = await resolveTemporalCli(process.env);
    assert.ok(['env', 'path', 'project'].includes(cli.source));
    fs.accessSync(cli.path, fs.constants.X_OK);
  });

  it('rejects a TEMPORAL_CLI_PATH that is not an executable file, in one line', async function () {
    const missing = path.join(os.tmpdir(), 'openworker-no-such-temporal');
    process.env.TEMPORAL_CLI_PATH = missing;
    await assert.rejects(resolveTemporalCli(process.env), (err: Error) => {
      assert.match(err.message, /TEMPORAL_CLI_PATH/);
      assert.ok(err.message.includes(missing));
      assert.ok(!err.message.includes('\n'));
      return true;
    });
  });
});

describe('dev/server startDevServer', function () {
  this.timeout(120_000);
  let dir: string;
  const servers: DevServer[] = [];

  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openworker-devserver-'));
  });
  after(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function start(): Promise<DevServer> {
    const server = await startDevServer({ dbFile: path.join(dir, 'temporal.db'), port: 0, headless: true });
    servers.push(server);
    return server;
  }

  it('starts, registers search attributes, and keeps state across a restart on the same db file', async function () {
    const first = await start();
    assert.match(first.address, /^127\.0\.0\.1:\d+$/);
    assert.equal(first.uiUrl, undefined);
    assert.ok(fs.existsSync(first.dbFile));
    assert.ok(fs.existsSync(`${first.dbFile}-wal`), 'SQLite runs with a write-ahead log (sqlitePragmas)');
    let attrs = await customSearchAttributes(first);
    for (const name of SEARCH_ATTRIBUTE_NAMES) assert.ok(name in attrs, `${name} registered`);

    // No worker needed: a started workflow with a search attribute is durable state on its own.
    const workflowId = `devserver-test-${Date.now()}`;
    await withConnection(first, async (connection) => {
      const client = new Client({ connection });
      await client.workflow.start('noSuchWorkflow', {
        workflowId,
        taskQueue: 'devserver-test',
        typedSearchAttributes: [{ key: stateKey, value: 'waiting' }],
      });
    });

    await first.stop();
    assert.equal(isAlive(first.pid), false, 'first server process is gone');

    // Same --search-attribute flags on an existing db must not fail with "already exists".
    const second = await start();
    attrs = await customSearchAttributes(second);
    for (const name of SEARCH_ATTRIBUTE_NAMES) assert.ok(name in attrs, `${name} still registered`);
    await withConnection(second, async (connection) => {
      const desc = await new Client({ connection }).workflow.getHandle(workflowId).describe();
      assert.equal(desc.status.name, 'RUNNING');
      assert.equal(desc.typedSearchAttributes.get(stateKey), 'waiting');
    });

    await second.stop();
    await second.stop(); // idempotent
    assert.equal(isAlive(second.pid), false, 'second server process is gone');
    // A non-zero exit after SIGTERM was seen once in CI (code 2): keep the server's own words if it recurs.
    const code = await second.exited;
    assert.equal(code, 0, `the server exits cleanly on SIGTERM; its log ends:\n${logTail(second.logFile)}`);
  });

  it('serves the Web UI when not headless, with the codec endpoint for stored payloads', async function () {
    const codec = await startCodecServer();
    try {
      const server = await startDevServer({ dbFile: path.join(dir, 'ui.db'), port: 0, codecEndpoint: codec.url });
      servers.push(server);
      assert.ok(server.uiUrl);
      const res = await fetch(server.uiUrl);
      assert.equal(res.status, 200);
      const settings = (await (await fetch(`${server.uiUrl}/api/v1/settings`)).json()) as {
        Codec?: { Endpoint?: string };
      };
      assert.equal(settings.Codec?.Endpoint, codec.url);
      await server.stop();
      assert.equal(isAlive(server.pid), false);
    } finally {
      await codec.close();
    }
  });
});
