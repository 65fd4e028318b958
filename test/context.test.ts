import { strict as assert } from 'node:assert';
import { temporal } from '@temporalio/proto';
import { sendMessage, sessionStatus, waitForTurn } from '../client/session';
import type { OpenWorkerClient } from '../client/connection';
import { sessionStatusQuery, sessionWorkflowId, turnWorkflowId } from '../workflows/definitions';
import type { ModelActivityInput, SessionInput, TurnInput } from '../workflows/types';
import { useFakeModelServer } from './support/fakeModelServer';
import { recordHistory } from './support/histories';
import { uniq } from './support/scenario';
import { useWorld } from './support/world';

// Transcripts by reference (#29): a later turn and each model call carry a reference to the stored
// transcript and only the messages since, the model still reads every message, and a worker killed
// after storing a step leaves a retry that reads the chain back from the payload store.

type Event = temporal.api.history.v1.IHistoryEvent;

async function eventsOf(c: OpenWorkerClient, workflowId: string): Promise<Event[]> {
  return (await c.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
}

function decode<T>(payload: temporal.api.common.v1.IPayload | undefined): T {
  return JSON.parse(Buffer.from(payload!.data!).toString('utf8')) as T;
}

describe('transcripts by reference', function () {
  this.timeout(120_000);
  const w = useWorld();
  const fake = useFakeModelServer();

  it('send each message once, the model reads them all, and a retry after a kill reads the stored chain', async () => {
    const sessionId = uniq('ctx');
    const lookup = (id: string) => ({ toolCalls: [{ id, name: 'lookup_contact', arguments: { name: 'ada' } }] });
    // Turn 2 reuses turn 1's tool call id: only the activity, reading the stored chain, knows it is taken.
    fake.enqueue(lookup('c1'), { text: 'done 1' }, lookup('c1'), lookup('c1'), { text: 'done 2' }, { text: 'done 3' });
    const first = await w.worker(fake.spec());
    // Two turns per run: turn 3 runs after continue-as-new.
    await w.c.client.workflow.start('session', {
      workflowId: sessionWorkflowId(sessionId),
      taskQueue: w.taskQueue,
      args: [{ sessionId, turnsPerRun: 2 }],
    });
    const m1 = await sendMessage(w.c, { sessionId, text: 'one' });
    assert.equal(
      (await waitForTurn(w.c, { sessionId, messageId: m1.messageId, timeoutMs: 60_000 })).state,
      'completed',
    );
    await first.kill('SIGKILL');

    // A fresh worker (nothing cached) stores turn 2's first step, then dies before reporting it.
    const crashing = await w.worker(fake.spec(), { faults: 'model.after_context_stored' });
    const m2 = await sendMessage(w.c, { sessionId, text: 'two' });
    assert.equal(await crashing.faultReached('model.after_context_stored', 60_000), `${sessionId}/2/1`);
    await crashing.kill('SIGKILL');
    await w.worker(fake.spec());
    assert.equal(
      (await waitForTurn(w.c, { sessionId, messageId: m2.messageId, timeoutMs: 60_000 })).state,
      'completed',
    );
    const m3 = await sendMessage(w.c, { sessionId, text: 'three' });
    assert.equal(
      (await waitForTurn(w.c, { sessionId, messageId: m3.messageId, timeoutMs: 60_000 })).state,
      'completed',
    );

    // The model read the whole transcript each time, the killed attempt and its retry alike.
    assert.deepEqual(
      fake.requests.map((r) => r.body.messages.filter((m) => m.role !== 'system').length),
      [1, 3, 5, 5, 7, 9],
    );
    const transcript = (await sessionStatus(w.c, sessionId)).transcript;
    assert.equal(transcript.length, 10);
    const ids = transcript.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []).map((c) => c.id) : []));
    assert.deepEqual(ids, ['c1', 'c1#1'], 'the repeated id was renamed from the stored chain');

    // The session's second run holds a reference to the 8 messages of the first, none inline, and
    // turn 3 starts with it; its first model call stores them again, whole, for this run.
    const run2 = await eventsOf(w.c, sessionWorkflowId(sessionId));
    assert.ok(run2[0]!.workflowExecutionStartedEventAttributes?.continuedExecutionRunId, 'a second run');
    const carried = decode<SessionInput>(run2[0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]);
    assert.deepEqual([carried.transcript, carried.context?.messages], [[], 8]);
    const t3 = await eventsOf(w.c, turnWorkflowId(sessionId, 3));
    const start = decode<TurnInput>(t3[0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]);
    assert.deepEqual([start.history, start.context?.messages, start.storeContextAnew], [[], 8, true]);
    const call = t3.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel');
    const input = decode<ModelActivityInput>(call!.activityTaskScheduledEventAttributes!.input!.payloads![0]);
    assert.deepEqual(input.context, { base: start.context, append: [{ role: 'user', content: 'three' }], anew: true });
    // The session's own answer holds no message inline: a reference to all ten.
    const raw = await w.c.client.workflow.getHandle(sessionWorkflowId(sessionId)).query(sessionStatusQuery);
    assert.deepEqual([raw.transcript.length, raw.context?.messages], [0, 10]);
    await recordHistory(turnWorkflowId(sessionId, 2), 'turn-context-by-reference');
    await recordHistory(sessionWorkflowId(sessionId), 'session-context-by-reference');
  });
});
