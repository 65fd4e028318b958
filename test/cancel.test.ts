import { strict as assert } from 'node:assert';
import { cancelTurn } from '../client/cancel';
import { approve } from '../client/decisions';
import { sendMessage, turnStatus } from '../client/session';
import { startFakeModelServer } from './support/fakeModelServer';
import { unpairedToolCalls } from '../workflows/transcript';
import { recordHistory } from './support/histories';
import type { WorkerProcess } from './support/processes';
import { runCli } from './support/processes';
import { emailCall, eventually, scripted, sessionAfterCancel, startTurn, takenIn, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Cancelling a turn (CLI and library): nothing new runs, every call of the response gets a result,
// and the session takes the next message with a valid transcript.

describe('cancel a turn', function () {
  this.timeout(120_000);
  const w = useWorld();
  const email = emailCall;
  /** A turn whose one send_email (to `name`) was approved and stopped at `point` on a worker the test kills. */
  const approvedAt = async (point: string, name: string, text: string) => {
    const script = scripted([{ toolCalls: [email('c1', `${name}@example.com`)] }, { text }]);
    const w1 = await w.worker(script, { faults: `${point}@send_email` });
    const sessionId = uniq(`cancel-${point.replace(/\W/g, '-')}`);
    const parked = await startTurn(w.c, sessionId, `email ${name}`);
    await approve(w.c, { sessionId, toolCallId: 'c1', by: 'alice' });
    return { script, w1, sessionId, parked, executionId: await w1.faultReached(point) };
  };
  /** Cancels the turn and, once the turn has taken the cancel, replaces its worker as if it crashed. */
  const cancelAcrossACrash = async (sessionId: string, workflowId: string, w1: WorkerProcess, script: string) => {
    const cancelling = cancelTurn(w.c, { sessionId, waitMs: 60_000 });
    await cancelProcessed(workflowId);
    await w1.kill('SIGKILL');
    await w.worker(script);
    return cancelling;
  };
  /** The model is told the call's outcome is unknown, with its execution ID, so it does not retry blindly. */
  const resultSaysUnknown = async (sessionId: string, executionId: string) => {
    const s = await sessionAfterCancel(w.c, sessionId);
    const result = s.transcript.find((m) => m.role === 'tool');
    assert.match(
      result?.role === 'tool' ? result.content : '',
      new RegExp(
        `outcome unknown: the turn was cancelled while this call \\(execution ${executionId}\\) was in flight; check before doing it again`,
      ),
    );
  };

  it('while calls wait for approval: both get "interrupted", nothing is sent, the next message runs', async () => {
    await w.worker(
      scripted([
        { toolCalls: [email('c1', 'ann@example.com'), email('c2', 'ben@example.com')] },
        { text: 'after the cancel' },
      ]),
    );
    const sessionId = uniq('cancel');
    const parked = await startTurn(w.c, sessionId, 'email ann and ben');
    assert.equal(parked.state, 'awaiting_approval');
    const res = await runCli(['cancel', sessionId, '--task-queue', w.taskQueue]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /cancelled/);
    const s = await sessionAfterCancel(w.c, sessionId);
    assert.deepEqual(unpairedToolCalls(s.transcript), []);
    const results = s.transcript.filter((m) => m.role === 'tool');
    assert.deepEqual(
      results.map((m) => (m.role === 'tool' ? m.content : '')),
      ['Error: interrupted: the turn was cancelled', 'Error: interrupted: the turn was cancelled'],
    );
    for (const e of parked.ledger) assert.equal(w.sink.deliveries(`<${e.executionId}@openworker-temporal>`), 0);
    const next = await startTurn(w.c, sessionId, 'carry on');
    assert.equal(next.state, 'completed');
    assert.equal(next.text, 'after the cancel');
  });

  it('with a call parked in recovery_required: "outcome unknown, check before doing it again", never silence', async () => {
    const { script, w1, sessionId, parked, executionId } = await approvedAt('tool.after_execute', 'cy', 'done');
    await w1.kill('SIGKILL');
    await w.worker(script);
    await eventually(
      async () => (await turnStatus(w.c, parked.workflowId)).state === 'recovery_required',
      'the call parks',
      60_000,
    );
    const t = await cancelTurn(w.c, { sessionId });
    assert.equal(t.settled, true);
    assert.equal(t.state, 'cancelled');
    assert.equal(t.ledger[0]!.state, 'recovery_required', 'the ledger keeps the unknown outcome');
    await resultSaysUnknown(sessionId, executionId);
    assert.equal(w.sink.deliveries(`<${executionId}@openworker-temporal>`), 1, 'sent once, never again');
  });

  it('during a model call: the provider request is aborted, the turn ends, the next message runs', async () => {
    const fake = await startFakeModelServer();
    try {
      await w.worker(`openai-compatible:fake-model@${fake.url}`);
      fake.enqueue({ hang: true });
      const sessionId = uniq('cancel-model');
      const sent = await sendMessage(w.c, { sessionId, text: 'think hard' });
      await eventually(async () => fake.requests.length === 1, 'the model call reaches the provider');
      const t = await cancelTurn(w.c, { sessionId });
      assert.equal(t.state, 'cancelled');
      assert.deepEqual(t.ledger, []);
      // The activity learns of the cancel with its next heartbeat (every 10 s) and aborts the request.
      await eventually(async () => fake.aborted() === 1, 'the provider request is aborted', 30_000);
      const s = await sessionAfterCancel(w.c, sessionId);
      assert.equal(s.turns[0]!.messageId, sent.messageId);
      fake.enqueue({ text: 'Quick answer.' });
      const next = await startTurn(w.c, sessionId, 'never mind, be quick');
      assert.equal(next.state, 'completed', next.error);
      assert.equal(next.text, 'Quick answer.');
      assert.deepEqual(
        fake.requests[1]!.body.messages.map((m) => m.role),
        ['user', 'user'],
        'the cancelled turn left only its question behind',
      );
    } finally {
      await fake.close();
    }
  });

  /** Resolves once the worker has processed the turn's cancel request (a workflow task completed after it). */
  const cancelProcessed = (workflowId: string) =>
    takenIn(
      w.c.client.workflow.getHandle(workflowId),
      (e) => !!e.workflowExecutionCancelRequestedEventAttributes,
      'the worker processed the cancel request',
    );

  it('with a protected call in flight: the call finishes, and its real result reaches the transcript', async () => {
    await w.worker(scripted([{ toolCalls: [email('c1', 'hal@example.com')] }, { text: 'unused' }]));
    const sessionId = uniq('cancel-inflight');
    const parked = await startTurn(w.c, sessionId, 'email hal');
    const mid = `<${parked.ledger[0]!.executionId}@openworker-temporal>`;
    w.sink.arm({ mode: 'hold-250' });
    try {
      await approve(w.c, { sessionId, toolCallId: 'c1', by: 'alice' });
      await w.sink.waitFor('holding', mid);
      const cancelling = cancelTurn(w.c, { sessionId, waitMs: 60_000 });
      await cancelProcessed(parked.workflowId);
      assert.equal(w.sink.release(mid), 1);
      const t = await cancelling;
      await recordHistory(parked.workflowId, 'turn-cancel-in-flight');
      assert.equal(t.state, 'cancelled');
      assert.equal(t.ledger[0]!.state, 'succeeded', 'the attempt was not abandoned');
      const s = await sessionAfterCancel(w.c, sessionId);
      const result = s.transcript.find((m) => m.role === 'tool');
      assert.ok(result?.role === 'tool' && !result.isError && result.content.includes(mid), JSON.stringify(result));
      assert.equal(w.sink.deliveries(mid), 1);
    } finally {
      w.sink.disarm();
    }
  });

  it('with a protected call in flight whose worker dies: the call parks in recovery_required, the turn ends cancelled', async () => {
    const script = scripted([{ toolCalls: [email('c1', 'ida@example.com')] }, { text: 'unused' }]);
    const w1 = await w.worker(script);
    const sessionId = uniq('cancel-inflight-lost');
    const parked = await startTurn(w.c, sessionId, 'email ida');
    const executionId = parked.ledger[0]!.executionId;
    const mid = `<${executionId}@openworker-temporal>`;
    w.sink.arm({ mode: 'hold-250' });
    try {
      await approve(w.c, { sessionId, toolCallId: 'c1', by: 'alice' });
      await w.sink.waitFor('holding', mid);
      const t = await cancelAcrossACrash(sessionId, parked.workflowId, w1, script);
      assert.equal(t.state, 'cancelled');
      assert.equal(t.ledger[0]!.state, 'recovery_required', 'an unknown outcome is never dropped');
      await resultSaysUnknown(sessionId, executionId);
      assert.equal(w.sink.deliveries(mid), 1, 'stored once, never sent again');
    } finally {
      w.sink.disarm();
      w.sink.release();
    }
  });

  it('with a protected call lost before its dispatch marker: nothing is sent, the call is interrupted, the turn ends cancelled', async () => {
    const { script, w1, sessionId, parked, executionId } = await approvedAt('tool.before_dispatch', 'jo', 'unused');
    const t = await cancelAcrossACrash(sessionId, parked.workflowId, w1, script);
    assert.equal(t.state, 'cancelled');
    const e = t.ledger[0]!;
    assert.equal(e.state, 'failed', 'its last heartbeat carried no marker: the tool was never called');
    assert.match(e.error ?? '', /interrupted: the turn was cancelled before this call ran/);
    assert.ok(!e.events.some((ev) => ev.type === 'dispatched'), JSON.stringify(e.events));
    assert.equal(w.sink.deliveries(`<${executionId}@openworker-temporal>`), 0);
  });

  it('with a protected call no activity worker has started: the call is interrupted at once, nothing is sent', async () => {
    const script = scripted([{ toolCalls: [email('c1', 'kim@example.com')] }, { text: 'unused' }]);
    const w1 = await w.worker(script);
    const sessionId = uniq('cancel-unstarted');
    const parked = await startTurn(w.c, sessionId, 'email kim');
    // From here no worker runs activities: the tool's attempt stays scheduled, never started.
    await w1.kill('SIGKILL');
    await w.worker(script, { extraArgs: ['--only', 'workflows'] });
    await approve(w.c, { sessionId, toolCallId: 'c1', by: 'alice' });
    await eventually(
      async () => (await turnStatus(w.c, parked.workflowId)).ledger[0]!.runs === 1,
      'the run is scheduled',
    );
    const t = await cancelTurn(w.c, { sessionId, waitMs: 30_000 });
    assert.equal(t.state, 'cancelled');
    const e = t.ledger[0]!;
    assert.equal(e.state, 'failed', 'the server cancelled an attempt no worker took: it never ran');
    assert.match(e.error ?? '', /interrupted: the turn was cancelled before this call ran/);
    assert.equal(w.sink.deliveries(`<${e.executionId}@openworker-temporal>`), 0);
    await recordHistory(parked.workflowId, 'turn-cancel-unstarted-heartbeat');
  });

  it('no running turn → one line, exit 1; a bad --turn → exit 2', async () => {
    const sessionId = uniq('cancel-none');
    await w.worker(scripted([{ text: 'hi' }]));
    await startTurn(w.c, sessionId, 'hello');
    const none = await runCli(['cancel', sessionId, '--task-queue', w.taskQueue]);
    assert.equal(none.code, 1);
    assert.match(
      none.stderr,
      /^error: session '.*' has no running turn to cancel; see 'openworker-temporal show .*'$/m,
    );
    const ended = await runCli(['cancel', sessionId, '--turn', '1', '--task-queue', w.taskQueue]);
    assert.equal(ended.code, 2);
    assert.match(ended.stderr, /turn 1 of session .* has already ended \(completed\); nothing to cancel/);
    const bad = await runCli(['cancel', sessionId, '--turn', 'zero', '--task-queue', w.taskQueue]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /--turn must be a positive integer/);
  });
});
