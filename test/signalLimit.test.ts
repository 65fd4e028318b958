import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OpenWorkerClient } from '../client/connection';
import { connectClient } from '../client/connection';
import type { DevServer } from '../dev/server';
import { DYNAMIC_CONFIG, startDevServer } from '../dev/server';
import { approveSignal, sessionWorkflowId } from '../workflows/definitions';
import { runCli } from './support/processes';
import { useWorld } from './support/world';
import { scripted, startTurn, uniq } from './support/scenario';

// Signals stay in history: a run that takes too many grows toward Temporal's history limits, and a
// session cannot continue as new while its turn runs. `server`/`dev` cap the signals one run takes
// (history.maximumSignalsPerExecution, 2,000); past it the server refuses them and the CLI says so in
// one line. A server of this test's own with a cap of 6 shows it without sending thousands.

const CAP = 6;
const LIMIT_LINE = /NOT delivered: .* has taken the most signals one workflow run may take/;

describe('a run takes a bounded number of signals', function () {
  this.timeout(120_000);
  const w = useWorld();
  let server: DevServer;
  let dir: string;
  let c: OpenWorkerClient;

  before(async function () {
    this.timeout(90_000);
    dir = mkdtempSync(join(tmpdir(), 'openworker-signal-limit-'));
    server = await startDevServer({
      port: 0,
      headless: true,
      dbFile: join(dir, 'temporal.db'),
      dynamicConfig: { 'history.maximumSignalsPerExecution': CAP },
    });
  });
  after(async () => {
    await c?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('`server` and `dev` set the cap', () => {
    assert.equal(DYNAMIC_CONFIG['history.maximumSignalsPerExecution'], 2000);
  });

  it('a flooded turn and a flooded session refuse more signals with one line, and stay readable', async () => {
    const sessionId = uniq('flood');
    const q = ['--address', server.address, '--task-queue', w.taskQueue];
    const script = scripted([
      { toolCalls: [{ id: 'm1', name: 'send_email', arguments: { to: 'bob@example.com', subject: 'Hi', body: 'x' } }] },
      { text: 'Sent.' },
    ]);
    await w.worker(script, { address: server.address });
    c = await connectClient({ address: server.address, taskQueue: w.taskQueue });
    const parked = await startTurn(c, sessionId, 'send it');

    // Junk decisions for a call the turn does not have, until the server refuses one.
    const turn = c.client.workflow.getHandle(parked.workflowId);
    let taken = 0;
    for (; taken <= CAP; taken++) {
      const refused = await turn.signal(approveSignal, { toolCallId: `junk-${taken}`, by: 'flood' }).then(
        () => false,
        () => true,
      );
      if (refused) break;
    }
    assert.equal(taken, CAP, 'the server takes exactly the cap');
    const approve = await runCli(['approve', sessionId, 'm1', '--by', 'alice', ...q]);
    assert.notEqual(approve.code, 0);
    assert.equal(approve.stderr.trim().split('\n').length, 1, approve.stderr);
    assert.match(approve.stderr, LIMIT_LINE);
    assert.match(approve.stderr, /cancel it/);

    // The session: messages queue behind the parked turn until its run has taken the cap.
    let queued = 1; // the message that started the turn
    let last;
    for (let i = 0; i < CAP; i++) {
      last = await runCli(['turn', sessionId, `more ${i}`, ...q]);
      if (last.code !== 0) break;
      queued++;
    }
    assert.equal(queued, CAP, 'the session took the cap, then refused');
    assert.notEqual(last!.code, 0);
    assert.equal(last!.stderr.trim().split('\n').length, 1, last!.stderr);
    assert.match(last!.stderr, LIMIT_LINE);
    assert.match(last!.stderr, /continues as new/);

    // Both still answer: nothing wedged, nothing failed.
    const shown = await runCli(['show', sessionId, '--json', ...q]);
    assert.equal(shown.code, 0, shown.stderr);
    const view = JSON.parse(shown.stdout) as { pending: unknown[]; executions: { state: string }[] };
    assert.equal(view.pending.length, CAP - 1);
    assert.equal(view.executions[0]!.state, 'awaiting_approval');
    for (const id of [parked.workflowId, sessionWorkflowId(sessionId)]) {
      const events = (await c.client.workflow.getHandle(id).fetchHistory()).events ?? [];
      assert.ok(!events.some((e) => e.workflowTaskFailedEventAttributes), `${id}: a workflow task failed`);
    }
  });
});
