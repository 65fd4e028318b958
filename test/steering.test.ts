import { strict as assert } from 'node:assert';
import { cancelTurn } from '../client/cancel';
import { approve } from '../client/decisions';
import { sendMessage, sessionStatus, waitForTurn } from '../client/session';
import { sessionWorkflowId, steerSignal, turnWorkflowId } from '../workflows/definitions';
import type { Message } from '../workflows/types';
import { useFakeModelServer } from './support/fakeModelServer';
import { recordHistory } from './support/histories';
import { emailCall, eventually, takenIn, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Steering (#29 part 4, workflows/steering.ts): a message sent while a turn runs reaches that turn's
// next model call, placed after the tool results, and starts no turn of its own; one the turn could
// not take (it ended first) runs as the next turn. The fake model server keeps what each call saw.

describe('steering a running turn', function () {
  this.timeout(60_000);
  const w = useWorld();
  const fake = useFakeModelServer();

  const seen = (i: number) => fake.requests[i]!.body.messages.filter((m) => m.role !== 'system');
  /** What model call `i` saw, one [role, tool call id or content] per message. */
  const seenRows = (i: number) => seen(i).map((m) => [m.role, m.tool_call_id ?? m.tool_calls?.[0]?.id ?? m.content]);
  /** Resolves once the session has given the message to turn `n` and a task of that turn has taken the signal in. */
  const given = async (sessionId: string, messageId: string, n: number) => {
    await eventually(
      async () => (await sessionStatus(w.c, sessionId)).pending.find((p) => p.messageId === messageId)?.steering === n,
      'the session gives the message to the running turn',
      15_000,
    );
    await takenIn(
      w.c.client.workflow.getHandle(turnWorkflowId(sessionId, n)),
      (e) => e.workflowExecutionSignaledEventAttributes?.signalName === steerSignal.name,
      'the turn takes the steer signal in',
    );
  };

  it('while a call waits for approval: the next model call sees the message after the tool result; no extra turn', async () => {
    await w.worker(fake.spec());
    const sessionId = uniq('steer');
    fake.enqueue(
      { toolCalls: [emailCall('c1', 'bob@example.com')] },
      { text: 'Sent to Bob; I will cc Carol next time.' },
    );
    const first = await sendMessage(w.c, { sessionId, text: 'email bob' });
    const parked = await waitForTurn(w.c, { sessionId, messageId: first.messageId, timeoutMs: 30_000 });
    assert.equal(parked.state, 'awaiting_approval');

    const steer = await sendMessage(w.c, { sessionId, text: 'and cc carol from now on' });
    await given(sessionId, steer.messageId, 1);
    assert.equal(fake.requests.length, 1, 'no model call while the call waits');
    await approve(w.c, { sessionId, toolCallId: 'c1', by: 'alice' });

    const done = await waitForTurn(w.c, { sessionId, messageId: steer.messageId, timeoutMs: 30_000 });
    assert.equal(done.turn, 1, 'the steered message is handled by the turn it steered');
    assert.equal(done.state, 'completed', done.error);
    assert.deepEqual(
      seenRows(1),
      [
        ['user', 'email bob'],
        ['assistant', 'c1'],
        ['tool', 'c1'],
        ['user', 'and cc carol from now on'],
      ],
      'the second model call saw the message after the tool result',
    );
    const s = await eventually(async () => {
      const st = await sessionStatus(w.c, sessionId);
      return st.turns[0]?.state === 'completed' && st;
    }, 'the session records the turn');
    assert.deepEqual(
      s.turns.map((t) => [t.n, t.messageId, t.steered]),
      [[1, first.messageId, [steer.messageId]]],
      'one turn, which took the message',
    );
    assert.deepEqual(s.pending, []);
    assert.deepEqual(
      s.transcript.map((m: Message) => (m.role === 'tool' ? `tool ${m.toolCallId}` : `${m.role} ${m.content}`)),
      [
        'user email bob',
        'assistant ',
        'tool c1',
        'user and cc carol from now on',
        'assistant Sent to Bob; I will cc Carol next time.',
      ],
      'the transcript records it where the model saw it',
    );
    assert.equal(w.sink.messages().length, 1, 'the approved call ran once, as approved');
    await recordHistory(sessionWorkflowId(sessionId), 'session-steering');
    await recordHistory(turnWorkflowId(sessionId, 1), 'turn-steering');
  });

  // Issue #40 hole 3: the turn took the message for its next model call, then was cancelled before
  // that call answered; it reported the message as steered, the session dropped it, nothing answered it.
  it('cancelled while an approved call runs: the message runs as its own turn, the cancelled turn did not take it', async () => {
    await w.worker(fake.spec());
    const sessionId = uniq('steer-cancel');
    fake.enqueue({ toolCalls: [emailCall('c1', 'dan@example.com')] }, { text: 'From now on I cc Carol.' });
    const first = await sendMessage(w.c, { sessionId, text: 'email dan' });
    const parked = await waitForTurn(w.c, { sessionId, messageId: first.messageId, timeoutMs: 30_000 });
    assert.equal(parked.state, 'awaiting_approval');
    const mid = `<${parked.ledger[0]!.executionId}@openworker-temporal>`;
    w.sink.arm({ mode: 'hold-250' });
    try {
      await approve(w.c, { sessionId, toolCallId: 'c1', by: 'alice' });
      await w.sink.waitFor('holding', mid);
      const steer = await sendMessage(w.c, { sessionId, text: 'and cc carol from now on' });
      await given(sessionId, steer.messageId, 1);
      const cancelling = cancelTurn(w.c, { sessionId, waitMs: 60_000 });
      await takenIn(
        w.c.client.workflow.getHandle(parked.workflowId),
        (e) => !!e.workflowExecutionCancelRequestedEventAttributes,
        'the turn takes the cancel in',
      );
      assert.equal(w.sink.release(mid), 1);
      assert.equal((await cancelling).state, 'cancelled');

      const second = await waitForTurn(w.c, { sessionId, messageId: steer.messageId, timeoutMs: 30_000 });
      assert.equal(second.turn, 2, 'the message became a turn of its own');
      assert.equal(second.state, 'completed', second.error);
      assert.equal(second.text, 'From now on I cc Carol.');
      assert.equal(fake.requests.length, 2, 'the cancelled turn made no model call after the cancel');
      assert.deepEqual(
        seenRows(1),
        [
          ['user', 'email dan'],
          ['assistant', 'c1'],
          ['tool', 'c1'],
          ['user', 'and cc carol from now on'],
        ],
        'the second turn saw the message once, after the first turn',
      );
      const s = await sessionStatus(w.c, sessionId);
      assert.deepEqual(
        s.turns.map((t) => [t.n, t.messageId, t.state, t.steered]),
        [
          [1, first.messageId, 'cancelled', undefined],
          [2, steer.messageId, 'completed', undefined],
        ],
      );
      assert.deepEqual(
        s.transcript.filter((m) => m.role === 'user').map((m) => m.content),
        ['email dan', 'and cc carol from now on'],
        'once each',
      );
      assert.deepEqual(s.pending, []);
      assert.equal(w.sink.deliveries(mid), 1, 'the approved call ran once');
    } finally {
      w.sink.disarm();
      w.sink.release();
    }
  });

  it('a turn that ends before its next model call leaves the message to run as the next turn', async () => {
    await w.worker(fake.spec());
    const sessionId = uniq('steer-late');
    let release: () => void = () => undefined;
    const hold = new Promise<void>((r) => (release = r));
    fake.enqueue({ text: 'Hello.', hold }, { text: 'Noted: be brief.' });
    const first = await sendMessage(w.c, { sessionId, text: 'hi' });
    await eventually(async () => fake.requests.length === 1, 'the model call reaches the provider');
    // Given to the turn while its only model call is under way: that call cannot see it.
    const late = await sendMessage(w.c, { sessionId, text: 'be brief' });
    await given(sessionId, late.messageId, 1);
    release();

    const second = await waitForTurn(w.c, { sessionId, messageId: late.messageId, timeoutMs: 30_000 });
    assert.equal(second.turn, 2, 'the message became a turn of its own');
    assert.equal(second.state, 'completed', second.error);
    assert.deepEqual(
      seen(0).map((m) => m.content),
      ['hi'],
    );
    assert.deepEqual(
      seen(1).map((m) => [m.role, m.content]),
      [
        ['user', 'hi'],
        ['assistant', 'Hello.'],
        ['user', 'be brief'],
      ],
      'once, as the next turn',
    );
    const s = await sessionStatus(w.c, sessionId);
    assert.deepEqual(
      s.turns.map((t) => [t.n, t.messageId, t.steered]),
      [
        [1, first.messageId, undefined],
        [2, late.messageId, undefined],
      ],
    );
    assert.deepEqual(s.pending, []);
    await recordHistory(sessionWorkflowId(sessionId), 'session-steering-late');
  });
  it('the session continues as new right after that turn: the message it did not take runs in the next run', async () => {
    await w.worker(fake.spec());
    const sessionId = uniq('steer-can');
    const first = await w.c.client.workflow.start('session', {
      workflowId: sessionWorkflowId(sessionId),
      taskQueue: w.taskQueue,
      args: [{ sessionId, turnsPerRun: 1 }],
    });
    let release: () => void = () => undefined;
    const hold = new Promise<void>((r) => (release = r));
    fake.enqueue({ text: 'Hello.', hold }, { text: 'Noted.' });
    await sendMessage(w.c, { sessionId, text: 'hi' });
    await eventually(async () => fake.requests.length === 1, 'the model call reaches the provider');
    const late = await sendMessage(w.c, { sessionId, text: 'be brief' });
    await given(sessionId, late.messageId, 1);
    release();
    const second = await waitForTurn(w.c, { sessionId, messageId: late.messageId, timeoutMs: 30_000 });
    assert.equal(second.turn, 2);
    assert.equal(second.state, 'completed', second.error);
    const described = await w.c.client.workflow.getHandle(sessionWorkflowId(sessionId)).describe();
    assert.notEqual(described.runId, first.firstExecutionRunId, 'the session continued as new');
    const s = await sessionStatus(w.c, sessionId);
    assert.deepEqual(
      s.transcript.filter((m) => m.role === 'user').map((m) => m.content),
      ['hi', 'be brief'],
      'once each',
    );
    assert.deepEqual(s.pending, []);
  });
});
