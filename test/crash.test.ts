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

// The seed repro and the reconcile fence, told as stories with real SIGKILLs at points the worker
// itself reports (they also record the replay fixtures). Every row of the fault matrix, for every
// policy, is in matrix.test.ts.

describe('crashes at precise points (SIGKILL)', function () {
  this.timeout(120_000);
  const w = useWorld();
  const worker = w.worker;

  const emailScript = () =>
    scripted([
      {
        toolCalls: [
          { id: 'm1', name: 'send_email', arguments: { to: 'bob@example.com', subject: 'Invoice', body: 'Attached.' } },
        ],
      },
      { text: 'Sent.' },
    ]);

  const entryOf = async (t: WaitedTurn): Promise<LedgerEntry & { closed: boolean }> => {
    const s = await turnStatus(w.c, t.workflowId);
    return { ...s.ledger[0]!, closed: s.closed };
  };
  const until = (t: WaitedTurn, pred: (e: LedgerEntry & { closed: boolean }) => boolean, what: string) =>
    eventually(
      async () => {
        const e = await entryOf(t);
        return pred(e) && e;
      },
      what,
      60_000,
    );

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
    assert.ok(
      e.events.some((ev) => ev.type === 'outcome_unknown' && /heartbeat timeout/.test(String(ev.reason))),
      JSON.stringify(e.events),
    );
    assert.equal(w.sink.deliveries(messageId), 1, 'the approval was not reused for a second email');
    const res = await runCli([
      'recover',
      sessionId,
      'm1',
      '--decision',
      'succeeded',
      '--result',
      `{"messageId":"${messageId}"}`,
      '--by',
      'ops',
      '--task-queue',
      w.taskQueue,
    ]);
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

  it('reconcile: crash after dispatch, before the send → reconcile says not applied → exactly one re-run', async () => {
    const sessionId = uniq('rec-not');
    // The retry waits out the fence (dispatch + the send's start-to-close + 2 s): a shorter send timeout
    // than the world's 15 s (as fencedRetry.test.ts) shortens that wait; a send to the sink takes milliseconds.
    const env = { OPENWORKER_SMTP_TIMEOUT: '8s' };
    const w1 = await worker(emailScript(), { faults: 'tool.after_dispatch@send_email', reconcile: true, env });
    const parked = await startTurn(w.c, sessionId, 'send the invoice');
    await approve(w.c, { sessionId, toolCallId: 'm1', by: 'alice' });
    const executionId = await w1.faultReached('tool.after_dispatch');
    assert.equal(w.sink.deliveries(messageIdFor(executionId)), 0);
    await w1.kill('SIGKILL');
    await worker(emailScript(), { reconcile: true, env });
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
});
