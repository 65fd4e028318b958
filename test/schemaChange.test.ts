import { strict as assert } from 'node:assert';
import { join } from 'node:path';
import { approve } from '../client/decisions';
import { turnStatus } from '../client/session';
import { messageIdFor } from '../activities/tools/sendEmail';
import { invariantViolations } from '../workflows/ledger';
import { workflowTaskFailures } from './support/eventCounts';
import { recordHistory } from './support/histories';
import { ROOT, runCli } from './support/processes';
import { emailCall, eventually, scripted, startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Issue #27: a retry that runs on a later build whose tool schema no longer accepts the recorded
// arguments is refused before the tool runs. That proves only that the retry did not send: the
// first attempt, dispatched before its worker died, may have. The call parks again, never failed.

const NEW_SCHEMA = join(ROOT, 'test', 'fixtures', 'sendEmailNewSchema.mjs');

describe('a tool schema changed between deploys', function () {
  this.timeout(90_000);
  const w = useWorld();

  it("a retry refused by the new schema after a dispatched attempt parks again (1 delivery, never failed); the person's succeeded ends it", async () => {
    const script = scripted([{ toolCalls: [emailCall('c1', 'carol@example.com')] }, { text: 'sent' }]);
    const w1 = await w.worker(script, { faults: 'tool.after_execute@send_email' });
    const sessionId = uniq('schema');
    const t = await startTurn(w.c, sessionId, 'email carol');
    await approve(w.c, { sessionId, toolCallId: 'c1', by: 'alice' });
    const executionId = await w1.faultReached('tool.after_execute');
    const messageId = messageIdFor(executionId);
    assert.equal(w.sink.deliveries(messageId), 1, 'the first attempt sent before its worker died');
    await w1.kill('SIGKILL');
    // The next deploy: send_email's input now requires replyTo.
    await w.worker(script, { extraArgs: ['--tools', NEW_SCHEMA] });
    const recover = (decision: string, ...more: string[]) =>
      runCli(['recover', sessionId, 'c1', '--decision', decision, '--by', 'bob', '--task-queue', w.taskQueue, ...more]);
    await eventually(
      async () => (await turnStatus(w.c, t.workflowId)).state === 'recovery_required',
      'the first attempt parks',
    );
    const retried = await recover('retry', '--now');
    assert.equal(retried.code, 0, `${retried.stdout}${retried.stderr}`);

    const parked = await eventually(async () => {
      const s = await turnStatus(w.c, t.workflowId);
      const e = s.ledger[0]!;
      return (e.runs === 2 && e.state !== 'running' && e.state !== 'dispatched' && s) || s.closed;
    }, 'the retry settles');
    assert.notEqual(parked, true, 'the turn ended: the refused retry was taken as the call not applied');
    const e = (parked as Exclude<typeof parked, true>).ledger[0]!;
    assert.equal(e.state, 'recovery_required', `${e.state}: ${e.error ?? ''}`);
    const last = e.events.at(-1)!;
    assert.equal(last.type, 'recovery_required');
    assert.match(
      String(last.reason),
      /^this retry was refused before the tool ran \(invalid arguments for 'send_email': .*replyTo.*\); an earlier attempt was dispatched and may have applied: decide succeeded or failed \(a retry needs the tool to accept these arguments again\)$/,
    );
    assert.equal(w.sink.deliveries(messageId), 1, 'nothing sent by the retry');
    assert.ok(!e.events.some((ev) => ev.type === 'failed'), 'never recorded failed');

    const done = await recover('succeeded', '--reason', 'carol got it');
    assert.equal(done.code, 0, `${done.stdout}${done.stderr}`);
    const closed = await turnClosed(w.c, t);
    const f = closed.ledger[0]!;
    assert.deepEqual([closed.state, f.state, f.runs, f.recoveryDecision], ['completed', 'succeeded', 2, 'succeeded']);
    assert.equal(w.sink.deliveries(messageId), 1, 'one approval, one delivery');
    assert.deepEqual(await workflowTaskFailures(w.c, t.workflowId), []);
    assert.deepEqual(invariantViolations(closed.ledger), []);
    await recordHistory(t.workflowId, 'turn-refused-retry-after-dispatch');
  });
});
