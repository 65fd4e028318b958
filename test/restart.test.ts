import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OpenWorkerClient } from '../client/connection';
import { connectClient } from '../client/connection';
import { approve } from '../client/decisions';
import { turnStatus } from '../client/session';
import type { WaitedTurn } from '../client/session';
import type { MailSink } from '../dev/mailSink';
import { startMailSink } from '../dev/mailSink';
import type { DevServer } from '../dev/server';
import { startDevServer } from '../dev/server';
import { messageIdFor } from '../activities/tools/sendEmail';
import { runCli, spawnWorker } from './support/processes';
import { TOOLS, eventually, scripted, startTurn, uniq } from './support/scenario';

// Parked calls survive whatever stops: the worker, every worker, the server itself.

describe('restarts while a call is parked', function () {
  this.timeout(120_000);
  let sink: MailSink;
  let taskQueue: string;
  let c: OpenWorkerClient;
  const script = () =>
    scripted([
      {
        toolCalls: [
          { id: 'm1', name: 'send_email', arguments: { to: 'bob@example.com', subject: 'Hi', body: 'Hello.' } },
        ],
      },
      { text: 'Sent.' },
    ]);

  before(async () => {
    sink = await startMailSink();
  });
  after(async () => sink?.close());
  beforeEach(() => {
    taskQueue = uniq('tq');
  });
  afterEach(async () => c?.close());

  const worker = (address?: string) =>
    spawnWorker({
      taskQueue,
      model: script(),
      tools: [TOOLS],
      env: {
        OPENWORKER_SMTP_HOST: '127.0.0.1',
        OPENWORKER_SMTP_PORT: String(sink.smtpPort),
        ...(address ? { TEMPORAL_ADDRESS: address } : {}),
      },
    });
  const completed = (t: WaitedTurn) =>
    eventually(
      async () => {
        const s = await turnStatus(c, t.workflowId);
        return s.closed && s;
      },
      'turn completes',
      60_000,
    );

  it('an approval sent while no worker runs takes effect when one starts', async () => {
    c = await connectClient({ taskQueue });
    const sessionId = uniq('no-worker');
    const w1 = await worker();
    const parked = await startTurn(c, sessionId, 'say hi to bob');
    await w1.kill('SIGTERM');
    const res = await runCli(['approve', sessionId, 'm1', '--by', 'alice', '--task-queue', taskQueue], {
      timeoutMs: 30_000,
    });
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /delivered to .*not applied yet: no worker has processed it/);
    const executionId = parked.ledger[0]!.executionId;
    assert.equal(sink.deliveries(messageIdFor(executionId)), 0);
    await worker();
    const done = await completed(parked);
    assert.equal(done.state, 'completed');
    assert.equal(done.ledger[0]!.approvedBy, 'alice');
    assert.equal(sink.deliveries(messageIdFor(executionId)), 1);
  });

  it('a worker killed and replaced while a call awaits approval loses nothing', async () => {
    c = await connectClient({ taskQueue });
    const sessionId = uniq('worker-restart');
    const w1 = await worker();
    const parked = await startTurn(c, sessionId, 'say hi to bob');
    await w1.kill('SIGKILL');
    await worker();
    const still = await turnStatus(c, parked.workflowId);
    assert.equal(still.state, 'awaiting_approval');
    assert.deepEqual(
      still.ledger.map((e) => e.state),
      ['awaiting_approval'],
    );
    assert.equal((await approve(c, { sessionId, toolCallId: 'm1', by: 'alice' })).outcome, 'applied');
    const done = await completed(parked);
    assert.equal(done.state, 'completed');
    assert.equal(sink.deliveries(messageIdFor(done.ledger[0]!.executionId)), 1);
  });

  it('a dev server restarted on its file keeps the parked call, and the same worker carries on', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'openworker-restart-'));
    const dbFile = join(dir, 'temporal.db');
    let server: DevServer | undefined = await startDevServer({ port: 0, headless: true, dbFile });
    try {
      c = await connectClient({ address: server.address, taskQueue });
      const sessionId = uniq('server-restart');
      await worker(server.address);
      const parked = await startTurn(c, sessionId, 'say hi to bob');
      await c.close();
      const port = server.port;
      await server.stop();
      server = await startDevServer({ port, headless: true, dbFile });
      c = await connectClient({ address: server.address, taskQueue });
      const still = await turnStatus(c, parked.workflowId);
      assert.equal(still.state, 'awaiting_approval');
      const res = await runCli([
        'approve',
        sessionId,
        'm1',
        '--by',
        'alice',
        '--address',
        server.address,
        '--task-queue',
        taskQueue,
      ]);
      assert.equal(res.code, 0, res.stderr);
      const done = await completed(parked);
      assert.equal(done.state, 'completed');
      assert.equal(sink.deliveries(messageIdFor(done.ledger[0]!.executionId)), 1);
    } finally {
      await c?.close();
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
