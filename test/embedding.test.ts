import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { z } from 'zod';
import { OpenWorkerPlugin, approve, openWorkerClient, sendMessage, turnStatus, waitForTurn } from '../api/client';
import { defineTool, scriptedModel } from '../api/worker';
import { turnWorkflowId } from '../api/workflow';
import { testServer } from './support/hooks';

// A team that runs Temporal adds agent turns to the worker and Client it already has: the plugin
// beside its own workflows and activities on its own task queue, workflow code importing only
// `openworker-temporal/workflow`, approvals by signal (here forwarded by the user's own workflow).

const ROOT = join(__dirname, '..', '..');
const quiet = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };

/** A consumer's folder inside the repository: `openworker-temporal` resolves through its package.json `exports`. */
function consumerDir(): string {
  mkdirSync(join(ROOT, 'test-artifacts'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, 'test-artifacts', 'embed-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(ROOT, join(dir, 'node_modules', 'openworker-temporal'), 'dir');
  return dir;
}

// The user's workflows: their own activity, then a turn whose approval their workflow forwards.
const USER_WORKFLOWS = `
import { condition, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';
import { approveSignal, runAgentTurn, startAgentTurn } from 'openworker-temporal/workflow';

const { lookupOrder } = proxyActivities({ startToCloseTimeout: '10 seconds' });
export const managerApproval = defineSignal('managerApproval');

export async function refundFlow(sessionId) {
  let approval;
  setHandler(managerApproval, (a) => { approval = a; });
  const order = await lookupOrder(sessionId);
  const turn = await startAgentTurn({ sessionId, turn: 1, message: 'refund order ' + order });
  await condition(() => approval !== undefined);
  await turn.signal(approveSignal, approval);
  const result = await turn.result();
  return { order, state: result.state, text: result.text };
}

// Whatever the caller passes: bad input must fail this workflow, never wedge it.
export async function anyTurn(request) {
  return runAgentTurn(request);
}
`;

describe('embedding: OpenWorkerPlugin in your own worker and Client', function () {
  this.timeout(120_000);
  let dir: string;

  before(() => {
    dir = consumerDir();
    writeFileSync(join(dir, 'workflows.js'), USER_WORKFLOWS);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a workflow importing openworker-temporal/workflow bundles with no Node built-in (with the plugin: beside the agent turn); the package root does not', async () => {
    const { code } = await bundleWorkflowCode({
      workflowsPath: join(dir, 'workflows.js'),
      plugins: [new OpenWorkerPlugin()],
      logger: quiet,
    });
    assert.match(code, /async function refundFlow\(/);
    assert.match(code, /async function agentTurn\(/);
    assert.doesNotMatch(code, /require\(["'](node:)?(fs|os|path|crypto|child_process|net|http)["']\)/);
    // The agent turn's bundle is ~4 MiB (zod/mini, @noble, source maps); the root import made 27.9.
    assert.ok(code.length < 8 * 1024 * 1024, `bundle is ${(code.length / 2 ** 20).toFixed(1)} MiB`);
    // What the issue saw: the root entry drags the worker, the client and node:* into the bundle.
    writeFileSync(
      join(dir, 'root.js'),
      `export { messageSignal } from 'openworker-temporal';\nexport async function w() {}\n`,
    );
    await assert.rejects(bundleWorkflowCode({ workflowsPath: join(dir, 'root.js'), logger: quiet }));
  });

  it('runs a turn beside your workflow and activity on your task queue; your workflow forwards the approval; one effect', async () => {
    const taskQueue = `user-queue-${process.pid}-${Date.now()}`;
    const effects = join(dir, 'effects.log');
    const refund = defineTool({
      name: 'refund',
      description: 'Refund an order',
      input: z.object({ order: z.string() }),
      requiresApproval: true,
      execute: ({ order }, ctx) => {
        writeFileSync(effects, `${order} ${ctx.executionId}\n`, { flag: 'a' });
        return { refunded: order };
      },
    });
    const model = scriptedModel({
      steps: [
        { toolCalls: [{ id: 'c1', name: 'refund', arguments: { order: 'A-17' } }] },
        { text: 'refunded A-17' },
        { toolCalls: [{ id: 'c1', name: 'refund', arguments: { order: 'B-2' } }] },
        { text: 'refunded B-2' },
      ],
    });
    const plugin = new OpenWorkerPlugin({ tools: [refund], model });
    const nativeConnection = await NativeConnection.connect({ address: testServer().address });
    const connection = await Connection.connect({ address: testServer().address });
    const worker = await Worker.create({
      connection: nativeConnection,
      taskQueue,
      workflowsPath: join(dir, 'workflows.js'),
      activities: { lookupOrder: async () => 'A-17' },
      plugins: [plugin],
    });
    const client = new Client({ connection, plugins: [new OpenWorkerPlugin()] });
    const running = worker.run();
    try {
      const sessionId = `embed-${process.pid}-${Date.now()}`;
      const flow = await client.workflow.start('refundFlow', {
        taskQueue,
        workflowId: `refund-${sessionId}`,
        args: [sessionId],
      });
      const turnId = turnWorkflowId(sessionId, 1);
      await until(async () => (await turnStatus(client, turnId).catch(() => undefined))?.state === 'awaiting_approval');
      await flow.signal('managerApproval', { toolCallId: 'c1', by: 'dana' });
      assert.deepEqual(await flow.result(), { order: 'A-17', state: 'completed', text: 'refunded A-17' });
      const lines = readFileSync(effects, 'utf8').trim().split('\n');
      assert.equal(lines.length, 1);
      const status = await turnStatus(client, turnId);
      assert.equal(lines[0], `A-17 ${status.ledger[0]!.executionId}`);
      assert.equal(status.decisions[0]?.by, 'dana');

      // A session on the same queue, through your Client: approved with the library's approve().
      const own = openWorkerClient(client, { taskQueue });
      const sent = await sendMessage(own, { sessionId: `${sessionId}-s`, text: 'refund B-2' });
      const second = turnWorkflowId(sent.sessionId, 1);
      await until(async () => (await turnStatus(client, second).catch(() => undefined))?.state === 'awaiting_approval');
      const decided = await approve(client, { sessionId: sent.sessionId, turn: 1, toolCallId: 'c1', by: 'erin' });
      assert.equal(decided.outcome, 'applied', JSON.stringify(decided));
      const done = await waitForTurn(own, { sessionId: sent.sessionId, messageId: sent.messageId, timeoutMs: 30_000 });
      assert.equal(done.state, 'completed');
      assert.equal(readFileSync(effects, 'utf8').trim().split('\n').length, 2);

      // Your histories replay with the plugin: your workflow and the turn it started.
      const histories = [flow.workflowId, turnId].map(async (workflowId) => ({
        workflowId,
        history: await client.workflow.getHandle(workflowId).fetchHistory(),
      }));
      const replayed = Worker.runReplayHistories(
        { workflowsPath: join(dir, 'workflows.js'), plugins: [new OpenWorkerPlugin({ tools: [refund], model })] },
        (async function* () {
          for (const h of histories) yield await h;
        })(),
      );
      for await (const r of replayed) assert.equal(r.error, undefined, `${r.workflowId}: ${r.error?.message}`);
      // Bad input and a turn ID already used fail your workflow at once with why, and start nothing.
      const failure = async (request: unknown) => {
        const h = await client.workflow.start('anyTurn', {
          taskQueue,
          workflowId: `any-${Math.random()}`,
          args: [request],
        });
        const err = await h.result().then(
          () => assert.fail('the workflow completed'),
          (e: { cause?: { type?: string; message?: string } }) => e.cause,
        );
        return `${err?.type}: ${err?.message}`;
      };
      assert.match(
        await failure({ sessionId, turn: 2, message: 'again', history: [null] }),
        /^BadInput: agent turn: history must be an array of messages/,
      );
      assert.match(
        await failure({ sessionId, turn: 1, message: 'again' }),
        new RegExp(`^TurnExists: agent turn: ${turnId} already exists .*use the next turn number`),
      );
      assert.equal(readFileSync(effects, 'utf8').trim().split('\n').length, 2, 'no effect from either');
      // Without the plugin the turn's history has no workflow to replay on.
      await assert.rejects(
        Worker.runReplayHistory({ workflowsPath: join(dir, 'workflows.js') }, (await histories[1]!).history),
      );
    } finally {
      worker.shutdown();
      await running;
      await nativeConnection.close();
      await connection.close();
    }
  });

  it('refuses a Client without the plugin, and an activity name the turn uses', async () => {
    const connection = await Connection.connect({ address: testServer().address });
    const nativeConnection = await NativeConnection.connect({ address: testServer().address });
    try {
      assert.throws(() => openWorkerClient(new Client({ connection })), /no OpenWorkerPlugin/);
      await assert.rejects(
        Worker.create({
          connection: nativeConnection,
          taskQueue: 'clash',
          activities: { callModel: async () => undefined },
          plugins: [new OpenWorkerPlugin({ model: scriptedModel({ steps: [] }) })],
        }),
        /registers activity 'callModel'/,
      );
      // A bundle built without the plugin would fail every turn's task: refused at start instead.
      await assert.rejects(
        Worker.create({
          connection: nativeConnection,
          taskQueue: 'no-turn',
          workflowBundle: { code: 'async function mine() {}' },
          plugins: [new OpenWorkerPlugin({ model: scriptedModel({ steps: [] }) })],
        }),
        /your workflowBundle lacks the workflows session, agentTurn, toolNames, scheduledTurn; build it with bundleWorkflowCode/,
      );
    } finally {
      await nativeConnection.close();
      await connection.close();
    }
  });
});

async function until(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
