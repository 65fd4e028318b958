import type { Duration } from '@temporalio/common';
import { ActivityFailure, condition, defineSignal, proxyActivities, setHandler } from '@temporalio/workflow';
import { toolResultMessage } from '../workflows/transcript';
import type { Message, ToolCall } from '../workflows/types';

// B1, the idiomatic Temporal agent loop, as the @temporalio/ai-sdk and OpenAI Agents samples write
// it: the model is an activity, each tool call is an activity, a call that needs approval waits for
// an `approve` signal. No ledger, no dispatch marker, no grants: a crash mid-tool retries the tool.

export interface IdiomaticActivities {
  /** The model's answer; each call says whether its tool needs approval (the tools live with the activities). */
  callModel(messages: Message[]): Promise<{ text: string; toolCalls: (ToolCall & { needsApproval: boolean })[] }>;
  runTool(call: ToolCall): Promise<unknown>;
}

const { callModel } = proxyActivities<IdiomaticActivities>({ startToCloseTimeout: '5 minutes' });

/** Approves (or rejects) tool calls by id; it may arrive before the calls it names. */
export const approveSignal = defineSignal<[{ toolCallIds: string[]; approved: boolean }]>('approve');

/** `toolTimeout`: one tool attempt's start-to-close timeout, so a crashed worker's call is retried that much later. */
export async function idiomaticTurn(
  message: string,
  maxIterations = 12,
  toolTimeout: Duration = '2 minutes',
): Promise<{ text: string; calls: number }> {
  const { runTool } = proxyActivities<IdiomaticActivities>({ startToCloseTimeout: toolTimeout });
  const decisions = new Map<string, boolean>();
  setHandler(approveSignal, ({ toolCallIds, approved }) => {
    for (const id of toolCallIds) decisions.set(id, approved);
  });

  const messages: Message[] = [{ role: 'user', content: message }];
  let calls = 0;
  for (let iteration = 1; iteration <= maxIterations; iteration++) {
    const { text, toolCalls } = await callModel(messages);
    const asked = toolCalls.map(({ id, name, arguments: args }) => ({ id, name, arguments: args }));
    messages.push({ role: 'assistant', content: text, ...(asked.length ? { toolCalls: asked } : {}) });
    if (!asked.length) return { text, calls };
    calls += asked.length;
    // The calls of one response run concurrently; each waits for its own approval first.
    const results = await Promise.all(
      toolCalls.map(async ({ needsApproval }, i): Promise<Message> => {
        const call = asked[i]!;
        if (needsApproval) {
          await condition(() => decisions.has(call.id));
          if (!decisions.get(call.id)) return toolResultMessage(call, { error: 'rejected by the user' });
        }
        try {
          return toolResultMessage(call, { result: await runTool(call) });
        } catch (err) {
          if (!(err instanceof ActivityFailure)) throw err;
          return toolResultMessage(call, { error: err.cause?.message ?? err.message });
        }
      }),
    );
    messages.push(...results);
  }
  return { text: '', calls };
}
