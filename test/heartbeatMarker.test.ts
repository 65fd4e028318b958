import { strict as assert } from 'node:assert';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { bundleWorkflowCode } from '@temporalio/worker';
import { startDevServer, type DevServer } from '../dev/server';
import type { FakeProcess } from './support/fakeProcess';
import { startFakeProcess } from './support/fakeProcess';
import type { ProbeOptions, ProbeResult } from './support/heartbeatProbe/workflow';
import { quietLogger } from './support/quietLogger';
import { uniq } from './support/scenario';

// Issue #16 proposes recording the dispatch marker as an awaited activity heartbeat instead of an
// update to the workflow. The design rests on what the server does with such a heartbeat; each test
// here checks one claim against the real dev server, with a bare worker process (no product code),
// so a Temporal upgrade that changes the behaviour fails here first.

const MAIN = path.join(__dirname, 'support', 'heartbeatProbe', 'main.js');
const MARKER = { dispatched: true, attempt: 1 };

describe('the heartbeat as a dispatch marker: what the server guarantees', function () {
  this.timeout(90_000);
  let dir: string;
  let server: DevServer;
  let connection: Connection;
  let probe: FakeProcess<{ ready: boolean }> | undefined;
  let bundle: string;
  const taskQueue = uniq('hb-probe');

  const startServer = async (port = 0) => {
    server = await startDevServer({ dbFile: path.join(dir, 'probe.db'), port, headless: true });
    connection = await Connection.connect({ address: server.address });
  };
  const client = () => new Client({ connection });
  const startProbe = async () =>
    (probe = await startFakeProcess<{ ready: boolean }>({
      name: 'heartbeat probe',
      main: MAIN,
      args: [server.address, taskQueue],
      prefix: 'PROBE',
      controlBase: () => '',
      env: { ...process.env, PROBE_BUNDLE: bundle },
      startTimeoutMs: 30_000,
    }));
  const run = (o: ProbeOptions) =>
    client().workflow.start('heartbeatProbe', { args: [o], taskQueue, workflowId: uniq('probe') });
  /** The `json` of the `PROBE <event> <attempt> <json>` line the probe printed. */
  const said = (event: string, attempt: number): unknown => {
    const line = probe!
      .output()
      .split('\n')
      .find((l) => l.startsWith(`PROBE ${event} ${attempt} `));
    assert.ok(line, `the probe printed "PROBE ${event} ${attempt} …":\n${probe!.output()}`);
    return JSON.parse(line.slice(`PROBE ${event} ${attempt} `.length));
  };

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hb-probe-'));
    await startServer();
    bundle = path.join(dir, 'probe-bundle.js');
    const { code } = await bundleWorkflowCode({
      workflowsPath: require.resolve('./support/heartbeatProbe/workflow'),
      logger: quietLogger,
    });
    fs.writeFileSync(bundle, code);
  });
  beforeEach(startProbe);
  afterEach(async () => {
    await probe?.stop();
    probe = undefined;
  });
  after(async () => {
    await connection?.close();
    await server?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a heartbeat timeout hands the workflow the marker as the last heartbeat details', async () => {
    const h = await run({
      mode: 'mark-then-hang',
      startToCloseTimeout: '60s',
      heartbeatTimeout: '1s',
      maximumAttempts: 1,
    });
    const result: ProbeResult = await h.result();
    assert.deepEqual(result, { kind: 'timeout', timeoutType: 'HEARTBEAT', lastHeartbeatDetails: MARKER });
  });

  it('so does a start-to-close timeout, with no heartbeat timeout set', async () => {
    const h = await run({ mode: 'mark-then-hang', startToCloseTimeout: '2s', maximumAttempts: 1 });
    const result: ProbeResult = await h.result();
    assert.deepEqual(result, { kind: 'timeout', timeoutType: 'START_TO_CLOSE', lastHeartbeatDetails: MARKER });
  });

  it('the next attempt is handed the marker of the attempt before (the server retries, not the workflow)', async () => {
    const h = await run({
      mode: 'mark-then-hang',
      startToCloseTimeout: '60s',
      heartbeatTimeout: '1s',
      maximumAttempts: 2,
    });
    const result: ProbeResult = await h.result();
    assert.deepEqual(result, { kind: 'completed', value: { prior: MARKER } });
  });

  it('a heartbeat from an attempt that timed out is refused, so a stale attempt learns it must not act', async () => {
    const h = await run({
      mode: 'mark-then-late',
      startToCloseTimeout: '60s',
      heartbeatTimeout: '1s',
      maximumAttempts: 2,
    });
    await probe!.waitFor('late', undefined, 20_000);
    assert.equal(said('late', 1), 'ActivityNotFoundError');
    const result: ProbeResult = await h.result();
    assert.deepEqual(
      result,
      { kind: 'completed', value: { prior: MARKER } },
      'the late beat did not change what attempt 2 saw',
    );
  });

  it('a cancel request comes back in the heartbeat answer', async () => {
    const h = await run({
      mode: 'beat-until-cancelled',
      startToCloseTimeout: '60s',
      heartbeatTimeout: '5s',
      maximumAttempts: 1,
    });
    await probe!.waitFor('beating', undefined, 20_000);
    await h.signal('cancelProbe');
    await probe!.waitFor('refused', undefined, 20_000);
    assert.equal(said('refused', 1), 'ActivityCancelledError');
    const result: ProbeResult = await h.result();
    assert.deepEqual(result, {
      kind: 'failed',
      type: 'HeartbeatRefused',
      message: 'heartbeat refused: ActivityCancelledError',
    });
  });

  it('an attempt that finishes after the cancel request hands the workflow its result', async () => {
    const h = await run({
      mode: 'finish-after-cancel',
      startToCloseTimeout: '60s',
      heartbeatTimeout: '5s',
      maximumAttempts: 1,
    });
    await probe!.waitFor('beating', undefined, 20_000);
    await h.signal('cancelProbe');
    const result: ProbeResult = await h.result();
    assert.deepEqual(result, { kind: 'completed', value: { finished: true } });
  });

  it('the marker is persisted before the answer: it survives the server killed right after', async () => {
    const h = await run({
      mode: 'mark-then-hang',
      startToCloseTimeout: '60s',
      heartbeatTimeout: '3s',
      maximumAttempts: 2,
    });
    await probe!.waitFor('marked', '1', 20_000);
    const { port } = server;
    server.kill('SIGKILL');
    await server.exited;
    await connection.close();
    await startServer(port);
    const described = await client().workflow.getHandle(h.workflowId).describe();
    const pending = described.raw.pendingActivities ?? [];
    assert.equal(pending.length, 1, 'the activity is still pending after the restart');
    const details = pending[0]!.heartbeatDetails?.payloads ?? [];
    assert.deepEqual(
      details.map((p) => defaultPayloadConverter.fromPayload(p)),
      [MARKER],
    );
    // And the attempt the restarted server schedules after the heartbeat timeout is handed it.
    const result: ProbeResult = await client().workflow.getHandle(h.workflowId).result();
    assert.deepEqual(result, { kind: 'completed', value: { prior: MARKER } });
  });
});
