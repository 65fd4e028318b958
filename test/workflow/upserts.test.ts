import { strict as assert } from 'node:assert';
import { temporal } from '@temporalio/proto';
import type { WorkflowHandle } from '@temporalio/client';
import { z } from 'zod';
import { defineTool } from '../../activities/tool';
import { OpenWorkerSession, OpenWorkerState, approveSignal, decisionsSignal } from '../../workflows/definitions';
import type { TurnResult } from '../../workflows/types';
import { assertLive, until, useWorkflowTier } from './harness';

// What a turn upserts (docs/performance.md "Per cause"): no patch marker, no state upsert at the start
// when the turn was started with its state, and one upsert per state the turn rests in (a call
// approved before it existed never shows awaiting_approval).

type Event = temporal.api.history.v1.IHistoryEvent;

const send = defineTool({
  name: 'send',
  description: 'Sends a message (an external effect).',
  input: z.object({ to: z.string() }),
  timeouts: { startToClose: '2s', heartbeat: '2s' },
  execute: ({ to }) => ({ delivered: to }),
});

const call = (id: string) => ({ id, name: 'send', arguments: { to: id } });

/** What the turn's upserts set, in order: OpenWorkerState values, and `patches` for TemporalChangeVersion. */
function upserts(events: Event[]): string[] {
  return events.flatMap((e) => {
    const fields = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
    if (!fields) return [];
    const state = fields[OpenWorkerState.name]?.data;
    if (state) return [JSON.parse(Buffer.from(state).toString('utf8')) as string];
    return fields.TemporalChangeVersion ? ['patches'] : ['other'];
  });
}

const markers = (events: Event[]): string[] =>
  events.flatMap((e) => {
    const m = e.markerRecordedEventAttributes;
    if (!m) return [];
    const id = m.details?.['patch-data']?.payloads?.[0]?.data;
    return [id ? (JSON.parse(Buffer.from(id).toString('utf8')) as { id: string }).id : String(m.markerName)];
  });

describe('workflow tier: what a turn upserts', function () {
  this.timeout(60_000);
  const tier = useWorkflowTier();
  let seq = 0;
  const startWithState = (): Promise<WorkflowHandle> => {
    const id = `upserts-${process.pid}-${++seq}`;
    return tier.client.workflow.start('agentTurn', {
      taskQueue: `workflow-tier-${process.pid}`,
      workflowId: id,
      args: [{ sessionId: id, turn: 1, message: 'go', history: [] }],
      typedSearchAttributes: [
        { key: OpenWorkerSession, value: id },
        { key: OpenWorkerState, value: 'running' },
      ],
    });
  };

  it('started with its state, three calls approved before they exist: no marker, one state upsert (completed)', async () => {
    const steps = [{ toolCalls: [call('c1'), call('c2'), call('c3')] }, { text: 'done' }];
    const h = await startWithState();
    await h.signal(decisionsSignal, {
      decisions: ['c1', 'c2', 'c3'].map((toolCallId) => ({ kind: 'approve' as const, toolCallId, by: 'ann' })),
    });
    const r = (await tier.withWorker([send], steps, () => h.result())) as TurnResult;
    assert.equal(r.state, 'completed');
    assert.deepEqual(
      r.ledger.map((e) => [e.state, e.approvedBy, e.runs]),
      [1, 2, 3].map(() => ['succeeded', 'ann', 1]),
    );
    const events = (await h.fetchHistory()).events ?? [];
    assert.deepEqual(markers(events), []);
    assert.deepEqual(upserts(events), ['completed']);
    await assertLive(h, r);
    await tier.record(h, 'turn-preapproved');
  });

  it('started without its state, a call that parks: running, awaiting_approval, running, completed (what the inbox reads)', async () => {
    const steps = [{ toolCalls: [call('c1')] }, { text: 'done' }];
    const h = await tier.start(steps);
    const r = (await tier.withWorker([send], steps, async () => {
      await until(h, (s) => s.state === 'awaiting_approval', 'the call waits');
      await h.signal(approveSignal, { toolCallId: 'c1', by: 'ann' });
      return h.result();
    })) as TurnResult;
    assert.equal(r.state, 'completed');
    assert.equal(r.ledger[0]!.state, 'succeeded');
    const events = (await h.fetchHistory()).events ?? [];
    assert.deepEqual(markers(events), []);
    assert.deepEqual(upserts(events), ['running', 'awaiting_approval', 'running', 'completed']);
    await assertLive(h, r);
    await tier.record(h, 'turn-parked-upserts');
  });
});
