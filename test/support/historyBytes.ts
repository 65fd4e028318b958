import { temporal } from '@temporalio/proto';
import type { OpenWorkerClient } from '../../client/connection';
import type { Message, TurnInput } from '../../workflows/types';
import { turnWorkflowId } from '../../workflows/definitions';

/** A transcript of `n` messages shaped like a real one: user asks, assistant calls a tool, tool answers. */
export function syntheticTranscript(n: number): Message[] {
  const out: Message[] = [];
  for (let i = 0; out.length < n; i++) {
    out.push({
      role: 'user',
      content: `Please look up customer ${i} and summarise their last three orders, including totals and dates.`,
    });
    if (out.length < n)
      out.push({
        role: 'assistant',
        content: `Looking up customer ${i}.`,
        toolCalls: [{ id: `call_${i}`, name: 'lookup_contact', arguments: { name: `customer-${i}` } }],
      });
    if (out.length < n)
      out.push({
        role: 'tool',
        toolCallId: `call_${i}`,
        name: 'lookup_contact',
        content: JSON.stringify({ name: `customer-${i}`, email: `customer-${i}@example.com`, orders: [120.5, 99, 42] }),
      });
    if (out.length < n)
      out.push({ role: 'assistant', content: `Customer ${i} ordered three times recently: 120.50, 99.00 and 42.00.` });
  }
  // A transcript never ends on a call without its result.
  const last = out[n - 1];
  if (last?.role === 'assistant' && last.toolCalls) out[n - 1] = { role: 'assistant', content: 'Let me check that.' };
  return out.slice(0, n);
}

export interface HistoryBytes {
  messages: number;
  /** Encoded size of the model activity's scheduled event: what one model call adds for its input. */
  modelCallInput: number;
  /** Encoded size of the turn's whole history. */
  total: number;
}

/** Runs a one-model-call turn over a transcript of `n` messages and measures its history. */
export async function measureHistoryBytes(c: OpenWorkerClient, sessionId: string, n: number): Promise<HistoryBytes> {
  const input: TurnInput = { sessionId, turn: 1, history: syntheticTranscript(n), message: 'hello' };
  const handle = await c.client.workflow.start('agentTurn', {
    workflowId: turnWorkflowId(sessionId, 1),
    taskQueue: c.taskQueue,
    args: [input],
  });
  await handle.result();
  const history = await handle.fetchHistory();
  const size = (e: temporal.api.history.v1.IHistoryEvent) =>
    temporal.api.history.v1.HistoryEvent.encode(e).finish().length;
  const model = history.events!.filter(
    (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel',
  );
  return {
    messages: n,
    modelCallInput: model.reduce((a, e) => a + size(e), 0) / Math.max(1, model.length),
    total: history.events!.reduce((a, e) => a + size(e), 0),
  };
}
