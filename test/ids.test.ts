import { strict as assert } from 'node:assert';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { resolveCall } from '../apps/approvals/calls';
import { approve } from '../client/decisions';
import { importSession } from '../client/import';
import { OpenWorkerError, sendMessage, sessionStatus, turnStatus } from '../client/session';
import { sessionWorkflowId, turnWorkflowId } from '../workflows/ids';
import { executionIdFor } from '../workflows/identity';
import { recordHistory } from './support/histories';
import { runCli } from './support/processes';
import { emailCall, eventually, scripted, startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Issue #27, hole 3: workflow IDs built by concatenation were not injective. A session named
// `x-turn-1` had the workflow ID of session x's turn 1, so `turn x-turn-1 "…"` signalled that turn
// (which has no message handler): the message was lost and the CLI said it was queued.

/** The names of the signals a workflow received, from its history. */
async function signalsOf(w: ReturnType<typeof useWorld>, workflowId: string): Promise<string[]> {
  const h = await w.c.client.workflow.getHandle(workflowId).fetchHistory();
  return (h.events ?? []).flatMap((e) =>
    e.workflowExecutionSignaledEventAttributes ? [e.workflowExecutionSignaledEventAttributes.signalName ?? ''] : [],
  );
}

describe('workflow IDs: one session is never another one’s turn', function () {
  this.timeout(60_000);
  const w = useWorld();

  it('`turn x-turn-1` while x’s turn 1 waits: one-line error, non-zero exit, nothing reaches the turn, which still completes', async () => {
    await w.worker(scripted([{ toolCalls: [emailCall('c1')] }, { text: 'sent' }]));
    const x = uniq('ids');
    const parked = await startTurn(w.c, x, 'email bob');
    assert.equal(parked.state, 'awaiting_approval');
    assert.equal(parked.workflowId, turnWorkflowId(x, 1));

    const r = await runCli(['turn', `${x}-turn-1`, 'hello', '--task-queue', w.taskQueue]);
    assert.notEqual(r.code, 0, `the CLI must not report the message as sent: ${r.stdout}`);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, /^error: invalid session id '.*-turn-1': it ends in '-turn-<digits>'.*use another id/);

    // The other entry points refuse it too: the library, import, and the approvals app's links.
    await assert.rejects(sendMessage(w.c, { sessionId: `${x}-turn-1`, text: 'hi' }), /ends in '-turn-<digits>'/);
    const jsonl = JSON.stringify({ role: 'user', content: 'hi' });
    await assert.rejects(
      importSession(w.c, { sessionId: `${x}-turn-2`, jsonl, source: 'test' }),
      (err: Error) => err instanceof OpenWorkerError && err.code === 'bad_input',
    );
    const ref = { sessionId: `${x}-turn-1`, turn: 1, toolCallId: 'c1' };
    await assert.rejects(
      resolveCall(w.c, executionIdFor(ref.sessionId, ref.turn, ref.toolCallId), ref),
      /ends in '-turn-<digits>'/,
    );

    // Nothing reached the turn, nothing is wedged: x's turn 1 is approved and completes.
    assert.deepEqual(await signalsOf(w, parked.workflowId), []);
    await approve(w.c, { sessionId: x, toolCallId: 'c1', by: 'alice' });
    const done = await turnClosed(w.c, parked);
    assert.equal(done.state, 'completed');
    assert.deepEqual(await signalsOf(w, parked.workflowId), ['approve']);
  });

  it('a message that lands on a workflow that is not a session is an error, not "queued"', async () => {
    // A valid session id whose workflow ID a raw client took with another workflow type: no worker
    // runs that type, so it just sits there, running, with no message handler.
    const y = uniq('taken');
    await w.c.client.workflow.start('notASession', {
      workflowId: sessionWorkflowId(y),
      taskQueue: w.taskQueue,
      workflowExecutionTimeout: '1 minute',
    });
    const r = await runCli(['turn', y, 'hello', '--task-queue', w.taskQueue]);
    assert.notEqual(r.code, 0, `the CLI must not report the message as sent: ${r.stdout}`);
    assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(
      r.stderr,
      /^error: message \S+ NOT delivered: session-taken-\S+ runs a 'notASession' workflow, not a session, and drops it; use another session id/,
    );
    await w.c.client.workflow.getHandle(sessionWorkflowId(y)).terminate('test done');
  });

  it('a turn whose ID another client took fails to start, is recorded failed, and the session goes on', async () => {
    await w.worker(scripted([{ text: 'second answered' }]));
    const z = uniq('squatted');
    await w.c.client.workflow.start('notASession', {
      workflowId: turnWorkflowId(z, 1),
      taskQueue: w.taskQueue,
      workflowExecutionTimeout: '1 minute',
    });
    await sendMessage(w.c, { sessionId: z, text: 'first' });
    // Not waitForTurn: the turn's ID names the other workflow, which answers no status query.
    const s = await eventually(async () => {
      const st = await sessionStatus(w.c, z);
      return st.turns[0]?.state === 'failed' && st;
    }, 'turn 1 is recorded failed');
    assert.equal(s.turns.length, 1);
    assert.match(s.turns[0]!.error ?? '', /already started|already exists/i);
    const second = await startTurn(w.c, z, 'second', 15_000);
    assert.equal(second.state, 'completed');
    assert.equal(second.turn, 2);
    await w.c.client.workflow.getHandle(turnWorkflowId(z, 1)).terminate('test done');
  });

  it('a raw start of a session with a refused id, or under another workflow ID, fails at once with the reason', async () => {
    await w.worker(scripted([]));
    const bad = `${uniq('raw')}-turn-3`;
    const raw = await w.c.client.workflow.start('session', {
      workflowId: sessionWorkflowId(bad),
      taskQueue: w.taskQueue,
      args: [{ sessionId: bad }],
      workflowExecutionTimeout: '30 seconds',
    });
    const other = uniq('elsewhere');
    const misplaced = await w.c.client.workflow.start('session', {
      workflowId: uniq('not-its-id'),
      taskQueue: w.taskQueue,
      args: [{ sessionId: other }],
      workflowExecutionTimeout: '30 seconds',
    });
    const failure = async (h: typeof raw): Promise<string> => {
      await eventually(async () => (await h.describe()).status.name !== 'RUNNING', 'the session ends', 15_000);
      const err: unknown = await h.result().then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(err instanceof WorkflowFailedError, `expected the session to fail, got ${String(err)}`);
      assert.ok(err.cause instanceof ApplicationFailure);
      assert.equal(err.cause.type, 'InvalidSessionId');
      return err.cause.message;
    };
    assert.match(await failure(raw), /^session refused: invalid session id '.*-turn-3': it ends in '-turn-<digits>'/);
    assert.match(
      await failure(misplaced),
      new RegExp(`^session refused: session '${other}' must run as workflow session-${other}, not not-its-id-`),
    );
    // It ran nothing: no turn of its own, and none under the other session's turn IDs.
    await assert.rejects(turnStatus(w.c, turnWorkflowId(bad, 1)), /not found/);
    await assert.rejects(turnStatus(w.c, turnWorkflowId(other, 1)), /not found/);
    await recordHistory(sessionWorkflowId(bad), 'session-refused-id');
  });
});
