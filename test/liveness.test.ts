import { strict as assert } from 'node:assert';
import { cancelTurn } from '../client/cancel';
import { approve, recover } from '../client/decisions';
import { grant, revoke } from '../client/grants';
import { sendMessage, turnStatus, waitForTurn } from '../client/session';
import type { WaitedTurn } from '../client/session';
import { grantsSignal, recoverSignal, turnWorkflowId } from '../workflows/definitions';
import { invariantViolations, pendingFence } from '../workflows/ledger';
import type { TurnStatus } from '../workflows/types';
import { workflowTaskFailures } from './support/eventCounts';
import { recordHistory } from './support/histories';
import { startFakeModelServer } from './support/fakeModelServer';
import { emailCall, eventually, scripted, startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Liveness (#14): the holes that wedged a turn (a workflow task failing forever on an impossible
// ledger transition, a worker that could not shut down) or let a revoked grant approve a call,
// reproduced against real worker processes.

describe('liveness: no wedged turn, no stale grant', function () {
  this.timeout(180_000);
  const w = useWorld();
  const email = emailCall;
  const mid = (executionId: string) => `<${executionId}@openworker-temporal>`;
  const types = (s: TurnStatus) => s.ledger[0]!.events.map((e) => e.type);

  /** The turn's history has no failed workflow task and its ledger no invariant violation. */
  const healthy = async (s: TurnStatus & { workflowId: string }) => {
    assert.deepEqual(await workflowTaskFailures(w.c, s.workflowId), [], 'no workflow task failed');
    assert.deepEqual(invariantViolations(s.ledger), [], 'no invariant_violated event');
  };

  /**
   * Sends cy one email, then loses the worker after the send: the call parks in recovery_required
   * with its dispatch marker set. Returns with a worker (no faults) running.
   */
  const parkAfterSend = async (script: string, env?: Record<string, string>) => {
    const w1 = await w.worker(script, { faults: 'tool.after_execute@send_email', ...(env ? { env } : {}) });
    const sessionId = uniq('liveness');
    const parked = await startTurn(w.c, sessionId, 'email cy');
    await approve(w.c, { sessionId, toolCallId: 'c1', by: 'alice' });
    const executionId = await w1.faultReached('tool.after_execute');
    await w1.kill('SIGKILL');
    const w2 = await w.worker(script, env ? { env } : {});
    const s = await eventually(
      async () => {
        const t = await turnStatus(w.c, parked.workflowId);
        return t.state === 'recovery_required' && t;
      },
      'the call parks',
      60_000,
    );
    assert.equal(s.ledger[0]!.dispatched, true, 'the dispatch marker stands');
    assert.equal(w.sink.deliveries(mid(executionId)), 1);
    return { sessionId, parked, executionId, w2 };
  };

  /** A cancelled turn after a decided retry: parked again, the decision audited as not applied, sent once, the session moves on. */
  const cancelledWithRetryNotApplied = async (
    sessionId: string,
    t: TurnStatus & { workflowId: string },
    executionId: string,
  ) => {
    assert.equal(t.state, 'cancelled', t.error);
    assert.equal(t.ledger[0]!.state, 'recovery_required', 'the unknown outcome is kept');
    const rec = t.decisions.filter((d) => d.kind === 'recover');
    assert.equal(rec.length, 1, JSON.stringify(t.decisions));
    assert.equal(rec[0]!.outcome, 'ignored');
    assert.match(rec[0]!.why ?? '', /not applied: the turn is cancelled/);
    // Parked anew, naming the retry that never ran: no pending retry is left on a cancelled turn.
    assert.equal(pendingFence(t.ledger[0]!), undefined, `no retry left waiting: ${JSON.stringify(types(t))}`);
    const parks = t.ledger[0]!.events.filter((e) => e.type === 'recovery_required');
    assert.equal(parks.length, 2, JSON.stringify(types(t)));
    assert.match(String(parks[1]!.reason), /the turn was cancelled before the retry decided by alice ran/);
    assert.equal(w.sink.deliveries(mid(executionId)), 1, 'the retry never ran');
    await healthy(t);
    const next = await startTurn(w.c, sessionId, 'carry on');
    assert.equal(next.state, 'completed', next.error);
  };

  it('a recover retry and a cancel in one workflow task: the turn ends cancelled, the retry audited as not applied', async () => {
    const script = scripted([{ toolCalls: [email('c1', 'cy@example.com')] }, { text: 'after the cancel' }]);
    const { sessionId, parked, executionId, w2 } = await parkAfterSend(script);
    // With no worker running, both land in history and the next worker sees them in one task.
    await w2.kill('SIGKILL');
    const handle = w.c.client.workflow.getHandle(parked.workflowId);
    await handle.signal(recoverSignal, {
      toolCallId: 'c1',
      by: 'alice',
      decision: 'retry',
      skipFence: true,
      executionId,
    });
    await handle.cancel();
    await w.worker(script);
    await cancelledWithRetryNotApplied(sessionId, await turnClosed(w.c, parked), executionId);
  });

  it('a cancel while a decided retry waits out the last attempt: the turn ends cancelled, the retry audited as not applied', async () => {
    const script = scripted([{ toolCalls: [email('c1', 'cy@example.com')] }, { text: 'after the cancel' }]);
    // A long start-to-close keeps the fence (dispatch + start-to-close) up while the test cancels.
    const { sessionId, parked, executionId } = await parkAfterSend(script, { OPENWORKER_SMTP_TIMEOUT: '90s' });
    const d = await recover(w.c, { sessionId, toolCallId: 'c1', by: 'alice', decision: 'retry' });
    assert.equal(d.outcome, 'applied', d.why);
    assert.ok(d.fence && Date.parse(d.fence.until) > Date.now(), `the retry is fenced: ${JSON.stringify(d)}`);
    assert.equal(types(await turnStatus(w.c, parked.workflowId)).at(-1), 'retry_fenced');
    const c = await cancelTurn(w.c, { sessionId, waitMs: 30_000 });
    assert.equal(c.settled, true, 'the cancel does not wait for the fence');
    await cancelledWithRetryNotApplied(sessionId, await turnClosed(w.c, parked), executionId);
  });

  it('workers split with --only: a read runs as a local activity on the workflow worker', async () => {
    const script = scripted([
      { toolCalls: [{ id: 'r1', name: 'lookup_contact', arguments: { name: 'bob' } }] },
      { text: 'found' },
    ]);
    await w.worker(script, { extraArgs: ['--only', 'workflows'] });
    await w.worker(script, { extraArgs: ['--only', 'activities'] });
    const t = await turnClosed(w.c, await startTurn(w.c, uniq('split-read'), 'find bob'));
    assert.equal(t.state, 'completed', t.error);
    assert.deepEqual([t.ledger[0]!.state, t.ledger[0]!.runs], ['succeeded', 1], JSON.stringify(t.ledger[0]));
    await healthy(t);
  });

  it('a grant revoked while a model response is pending approves none of its calls', async () => {
    const fake = await startFakeModelServer();
    try {
      await w.worker(`openai-compatible:fake-model@${fake.url}`);
      const sessionId = uniq('liveness-revoke');
      fake.enqueue({ text: 'Hello.' });
      assert.equal((await startTurn(w.c, sessionId, 'hi')).state, 'completed');
      const g = await grant(w.c, { sessionId, tool: 'send_email', by: 'alice' });
      assert.equal(g.outcome, 'applied');
      let release: () => void = () => undefined;
      const hold = new Promise<void>((r) => (release = r));
      fake.enqueue({ toolCalls: [email('c1', 'eve@example.com')], hold }, { text: 'Sent.' });
      const sent = await sendMessage(w.c, { sessionId, text: 'email eve' });
      await eventually(async () => fake.requests.length === 2, 'the model call reaches the provider');
      const r = await revoke(w.c, { sessionId, grantId: g.grant.id, by: 'bob' });
      assert.equal(r.outcome, 'applied');
      // The session forwards the revoked list to the turn; wait until the turn has taken it in.
      const workflowId = turnWorkflowId(sessionId, 2);
      await eventually(async () => {
        const events = (await w.c.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
        const at = events.findIndex(
          (e) => e.workflowExecutionSignaledEventAttributes?.signalName === grantsSignal.name,
        );
        return at >= 0 && events.slice(at).some((e) => e.workflowTaskCompletedEventAttributes);
      }, 'the turn received the revoke');
      release();
      const parked = await waitForTurn(w.c, { sessionId, messageId: sent.messageId, timeoutMs: 30_000 });
      assert.equal(parked.state, 'awaiting_approval', 'a revoked grant approves nothing');
      assert.equal(parked.ledger[0]!.state, 'awaiting_approval');
      assert.equal(parked.ledger[0]!.grantId, undefined);
      const executionId = parked.ledger[0]!.executionId;
      assert.equal(w.sink.deliveries(mid(executionId)), 0);
      await approve(w.c, { sessionId, toolCallId: 'c1', by: 'carol' });
      const done: WaitedTurn = await turnClosed(w.c, parked);
      assert.equal(done.state, 'completed', done.error);
      assert.equal(done.ledger[0]!.approvedBy, 'carol');
      assert.equal(w.sink.deliveries(mid(executionId)), 1);
      await healthy(done);
      await recordHistory(workflowId, 'turn-revoke-while-pending');
    } finally {
      await fake.close();
    }
  });
});
