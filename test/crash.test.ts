import { strict as assert } from 'node:assert';
import { approve } from '../client/decisions';
import { turnStatus } from '../client/session';
import type { WaitedTurn } from '../client/session';
import { messageIdFor } from '../activities/tools/sendEmail';
import type { LedgerEntry } from '../workflows/types';
import { runCli } from './support/processes';
import { useWorld } from './support/world';
import { eventually, scripted, startTurn, uniq } from './support/scenario';
import { recordHistory } from './support/histories';

// The seed's fault matrix, with real SIGKILLs at points the worker itself reports. A test never
// sleeps and hopes: it waits for "OPENWORKER_FAULT <point> <executionId>" and kills right then.

describe('crashes at precise points (SIGKILL)', function () {
  this.timeout(120_000);
  const w = useWorld();
  const worker = w.worker;

  const emailScript = () =>
    scripted([{ toolCalls: [{ id: 'm1', name: 'send_email', arguments: { to: 'bob@example.com', subject: 'Invoice', body: 'Attached.' } }] }, { text: 'Sent.' }]);

  const entryOf = async (t: WaitedTurn): Promise<LedgerEntry & { closed: boolean }> => {
    const s = await turnStatus(w.c, t.workflowId);
    return { ...s.ledger[0]!, closed: s.closed };
  };
  const until = (t: WaitedTurn, pred: (e: LedgerEntry & { closed: boolean }) => boolean, what: string) =>
    eventually(async () => {
      const e = await entryOf(t);
      return pred(e) && e;
    }, what, 60_000);

  it('manual: the seed repro — effect done, crash before the result is recorded → recovery_required, never re-sent', async () => {
    const sessionId = uniq('manual');
    const w1 = await worker(emailScript(), { faults: 'tool.after_execute@send_email' });
    const parked = await startTurn(w.c, sessionId, 'send the invoice to bob');
    assert.equal(parked.ledger[0]!.recovery, 'manual');
    await approve(w.c, { sessionId, toolCallId: 'm1', by: 'alice' });
    const executionId = await w1.faultReached('tool.after_execute');
    const messageId = messageIdFor(executionId);
    assert.equal(w.sink.deliveries(messageId), 1, 'the email went out before the crash');
    await w1.kill('SIGKILL');
    await worker(emailScript());
    const e = await until(parked, (x) => x.state === 'recovery_required', 'call parks in recovery_required');
    assert.equal(e.executionId, executionId);
    assert.equal(e.dispatched, true);
    assert.equal(e.runs, 1, 'no automatic second run');
    assert.equal(e.approvedBy, 'alice');
    assert.ok(e.events.some((ev) => ev.type === 'outcome_unknown' && /heartbeat timeout/.test(String(ev.reason))), JSON.stringify(e.events));
    assert.equal(w.sink.deliveries(messageId), 1, 'the approval was not reused for a second email');
    const res = await runCli(['recover', sessionId, 'm1', '--decision', 'succeeded', '--result', `{"messageId":"${messageId}"}`, '--by', 'ops', '--task-queue', w.taskQueue]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /recover m1: applied/);
    const done = await until(parked, (x) => x.closed, 'turn completes');
    assert.equal(done.state, 'succeeded');
    assert.equal(done.recoveryDecision, 'succeeded');
    assert.equal(done.recoveredBy, 'ops');
    assert.deepEqual(done.result, { messageId });
    assert.equal(w.sink.deliveries(messageId), 1);
    await recordHistory(parked.workflowId, 'turn-manual-recovery');
  });

  it('idempotent: crash after the effect → automatic attempt 2 with the same key, one effect', async () => {
    const sessionId = uniq('idem');
    const script = scripted([{ toolCalls: [{ id: 'p1', name: 'charge_card', arguments: { customer: 'acme', amount: 42 } }] }, { text: 'Charged.' }]);
    const w1 = await worker(script, { faults: 'tool.after_execute@charge_card' });
    const parked = await startTurn(w.c, sessionId, 'charge acme 42');
    await approve(w.c, { sessionId, toolCallId: 'p1', by: 'alice' });
    const executionId = await w1.faultReached('tool.after_execute');
    assert.equal(w.payments.effects(executionId), 1);
    await w1.kill('SIGKILL');
    await worker(script);
    const done = await until(parked, (x) => x.closed, 'turn completes');
    assert.equal(done.state, 'succeeded');
    assert.equal(done.attempts, 2);
    assert.equal(done.runs, 1, 'Temporal retried within the same activity');
    const keys = w.payments.ledger().requests.filter((r) => r.key === executionId);
    assert.equal(keys.length, 2, 'two requests, both with the execution ID as Idempotency-Key');
    assert.equal(w.payments.effects(executionId), 1, 'one effect');
  });

  it('reconcile: crash after the effect → reconcile says applied → no re-run', async () => {
    const sessionId = uniq('rec-applied');
    const w1 = await worker(emailScript(), { faults: 'tool.after_execute@send_email', reconcile: true });
    const parked = await startTurn(w.c, sessionId, 'send the invoice');
    assert.equal(parked.ledger[0]!.recovery, 'reconcile');
    await approve(w.c, { sessionId, toolCallId: 'm1', by: 'alice' });
    const executionId = await w1.faultReached('tool.after_execute');
    await w1.kill('SIGKILL');
    await worker(emailScript(), { reconcile: true });
    const done = await until(parked, (x) => x.closed, 'turn completes');
    assert.equal(done.state, 'succeeded');
    assert.equal(done.runs, 1, 'not executed again');
    assert.ok(done.events.some((ev) => ev.type === 'reconciled' && ev.answer === 'applied'));
    assert.equal((done.result as { reconciled?: boolean }).reconciled, true);
    assert.equal(w.sink.deliveries(messageIdFor(executionId)), 1);
  });

  it('reconcile: crash after dispatch, before the send → reconcile says not applied → exactly one re-run', async () => {
    const sessionId = uniq('rec-not');
    const w1 = await worker(emailScript(), { faults: 'tool.after_dispatch@send_email', reconcile: true });
    const parked = await startTurn(w.c, sessionId, 'send the invoice');
    await approve(w.c, { sessionId, toolCallId: 'm1', by: 'alice' });
    const executionId = await w1.faultReached('tool.after_dispatch');
    assert.equal(w.sink.deliveries(messageIdFor(executionId)), 0);
    await w1.kill('SIGKILL');
    await worker(emailScript(), { reconcile: true });
    const done = await until(parked, (x) => x.closed, 'turn completes');
    assert.equal(done.state, 'succeeded');
    assert.equal(done.runs, 2, 'one re-run');
    // The first "not applied" came while the lost attempt could still have been running: the turn
    // waited out its start-to-close window (a timer) and asked again before running it once more.
    assert.deepEqual(
      done.events.filter((ev) => ev.type === 'reconciled').map((ev) => ev.answer),
      ['not_applied', 'not_applied'],
    );
    const history = await w.c.client.workflow.getHandle(parked.workflowId).fetchHistory();
    assert.equal(history.events!.filter((ev) => ev.timerStartedEventAttributes).length, 1, 'one fence timer');
    assert.deepEqual(
      done.events.filter((ev) => ev.type === 'scheduled').map((ev) => ev.activityId),
      [executionId, `${executionId}-2`],
    );
    assert.equal(w.sink.deliveries(messageIdFor(executionId)), 1, 'exactly one email');
    await recordHistory(parked.workflowId, 'turn-reconcile-rerun');
  });

  it('crash before the dispatch marker → re-run automatically, one effect, no human', async () => {
    const sessionId = uniq('pre-dispatch');
    const w1 = await worker(emailScript(), { faults: 'tool.before_dispatch@send_email' });
    const parked = await startTurn(w.c, sessionId, 'send the invoice');
    assert.equal(parked.ledger[0]!.recovery, 'manual');
    await approve(w.c, { sessionId, toolCallId: 'm1', by: 'alice' });
    const executionId = await w1.faultReached('tool.before_dispatch');
    await w1.kill('SIGKILL');
    await worker(emailScript());
    const done = await until(parked, (x) => x.closed, 'turn completes');
    assert.equal(done.state, 'succeeded');
    assert.equal(done.runs, 2);
    assert.equal(done.recoveryDecision, undefined, 'no human decision was needed');
    assert.ok(!done.events.some((ev) => ev.type === 'recovery_required'));
    assert.equal(w.sink.deliveries(messageIdFor(executionId)), 1);
  });

  it('a reset turn never re-sends: the call goes to recovery_required under the same execution ID', async () => {
    const sessionId = uniq('reset');
    await worker(emailScript());
    const parked = await startTurn(w.c, sessionId, 'send the invoice');
    await approve(w.c, { sessionId, toolCallId: 'm1', by: 'alice' });
    const sent = await until(parked, (x) => x.closed, 'turn completes');
    const messageId = messageIdFor(sent.executionId);
    assert.equal(w.sink.deliveries(messageId), 1);
    // Reset to the first workflow task: the model call, the approval (re-applied) and the send replay.
    const handle = w.c.client.workflow.getHandle(parked.workflowId);
    const history = await handle.fetchHistory();
    const firstTask = history.events!.find((e) => e.workflowTaskCompletedEventAttributes)!;
    const described = await handle.describe();
    await w.c.client.workflowService.resetWorkflowExecution({
      namespace: 'default',
      workflowExecution: { workflowId: parked.workflowId, runId: described.runId },
      reason: 'test: reset after the effect',
      workflowTaskFinishEventId: firstTask.eventId,
      requestId: uniq('reset'),
    });
    const e = await until(parked, (x) => x.state === 'recovery_required', 'the reset run parks the call');
    assert.equal(e.executionId, sent.executionId, 'same execution ID after the reset');
    assert.equal(e.runs, 0, 'not run again');
    assert.equal(e.approvedBy, 'alice', 'the re-applied approval still counts, but cannot re-send on its own');
    assert.match(String(e.events.find((ev) => ev.type === 'recovery_required')?.reason), /turn was reset/);
    assert.equal(w.sink.deliveries(messageId), 1);
  });
});
