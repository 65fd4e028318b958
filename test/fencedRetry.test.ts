import { strict as assert } from 'node:assert';
import { approve } from '../client/decisions';
import { turnStatus } from '../client/session';
import { invariantViolations } from '../workflows/ledger';
import { workflowTaskFailures } from './support/eventCounts';
import { recordHistory } from './support/histories';
import { runCli } from './support/processes';
import { emailCall, eventually, scripted, startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Issue #27 hole 1: a person's retry of a call whose first attempt a relay still holds. The relay
// commits after the worker died and after a person, seeing nothing at the recipient, decided
// `retry`. Waiting out the attempt's window proves nothing about the relay; asking reconcile() does.

describe("a person's retry asks reconcile() before sending again", function () {
  this.timeout(120_000);
  const w = useWorld();
  const mid = (executionId: string) => `<${executionId}@openworker-temporal>`;

  it('a relay commits the first attempt after the worker died: the retry finds it, 1 delivery, succeeded via reconcile', async () => {
    const to = 'relay@example.com';
    const script = scripted([{ toolCalls: [emailCall('c1', to)] }, { text: 'sent' }]);
    // send_email parks for a person (manual) and keeps the lookup for reconcile(); a short window.
    const env = { OPENWORKER_SMTP_RECOVERY: 'manual', OPENWORKER_SMTP_TIMEOUT: '8s' };
    const w1 = await w.worker(script, { reconcile: true, env });
    const sessionId = uniq('fenced-relay');
    const t = await startTurn(w.c, sessionId, 'email the relay');
    const { executionId, recovery, hasReconcile } = t.ledger[0]!;
    assert.deepEqual([t.state, recovery, hasReconcile], ['awaiting_approval', 'manual', true]);
    // The relay has the message and will commit it whatever happens to the client (here: at the release).
    w.sink.arm({ mode: 'relay', recipient: to, commitAfterMs: 120_000 });
    await approve(w.c, { sessionId, toolCallId: 'c1', by: 'alice' });
    await w.sink.waitFor('holding', mid(executionId), 30_000);
    await w1.kill('SIGKILL');
    await w.worker(script, { reconcile: true, env });
    const parked = await eventually(
      async () => {
        const s = await turnStatus(w.c, t.workflowId);
        return s.state === 'recovery_required' && s;
      },
      'the call parks',
      60_000,
    );
    assert.equal(parked.ledger[0]!.dispatched, true);
    assert.equal(w.sink.deliveries(mid(executionId)), 0, 'a person looks: nothing at the recipient yet');
    // The person's screen says what a retry will do first.
    const show = await runCli(['show', sessionId, '--task-queue', w.taskQueue]);
    assert.match(show.stdout, /a retry first asks send_email's reconcile\(\) whether an earlier attempt was applied/);
    w.sink.release(mid(executionId)); // the relay commits, after the person looked and before the retry
    await w.sink.waitFor('stored', mid(executionId));

    const cli = await runCli([
      'recover',
      sessionId,
      'c1',
      '--decision',
      'retry',
      '--by',
      'bob',
      '--task-queue',
      w.taskQueue,
    ]);
    assert.equal(cli.code, 0, `${cli.stdout}${cli.stderr}`);
    assert.match(cli.stdout, /recover c1: applied/);
    assert.match(cli.stdout, /a retry first asks send_email's reconcile\(\)/);
    const done = await turnClosed(w.c, t);
    const e = done.ledger[0]!;
    assert.equal(w.sink.deliveries(mid(executionId)), 1, 'one approval, one delivery');
    assert.deepEqual([done.state, e.state, e.runs], ['completed', 'succeeded', 1]);
    const types = e.events.map((ev) => ev.type);
    const decided = types.indexOf('recovery_decided');
    assert.ok(decided > 0, types.join(' '));
    assert.deepEqual(
      types.slice(decided).filter((x) => x !== 'retry_fenced'),
      ['recovery_decided', 'reconciling', 'reconciled', 'succeeded'],
      'the retry asked reconcile() and sent nothing',
    );
    assert.deepEqual(
      [e.events.at(-2)!.answer, e.events.at(-1)!.via],
      ['applied', 'reconcile'],
      'succeeded via reconcile',
    );
    assert.deepEqual(await workflowTaskFailures(w.c, t.workflowId), []);
    assert.deepEqual(invariantViolations(done.ledger), []);
    await recordHistory(t.workflowId, 'turn-retry-asks-reconcile-relay');
  });
});
