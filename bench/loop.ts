import type { ModelProvider } from '../activities/model';
import type { ToolRegistry } from '../activities/registry';
import type { Message } from '../workflows/types';
import { toolResultMessage } from '../workflows/transcript';

/**
 * B0: the same turn loop as a plain function, with no durability: model → validate → (auto-approve)
 * → run the calls of a response concurrently → results → model … The physical limit.
 */
export async function runTurnInProcess(
  model: ModelProvider,
  registry: ToolRegistry,
  message: string,
  maxIterations = 12,
): Promise<{ text: string; calls: number }> {
  const messages: Message[] = [{ role: 'user', content: message }];
  const signal = new AbortController().signal;
  let calls = 0;
  for (let iteration = 1; iteration <= maxIterations; iteration++) {
    const r = await model.generate(
      { sessionId: 'b0', turn: 1, iteration, messages, tools: registry.descriptors() },
      { signal },
    );
    const planned = registry.plan(r.toolCalls);
    messages.push({
      role: 'assistant',
      content: r.text,
      ...(planned.length
        ? { toolCalls: planned.map((c) => ({ id: c.toolCallId, name: c.name, arguments: c.arguments })) }
        : {}),
    });
    if (!planned.length) return { text: r.text, calls };
    calls += planned.length;
    const results = await Promise.all(
      planned.map(async (c) => {
        const tool = registry.get(c.name);
        if (!tool || c.invalid)
          return toolResultMessage({ id: c.toolCallId, name: c.name }, { error: c.invalid ?? 'unknown tool' });
        const result = await tool.execute(tool.input.parse(c.arguments), {
          executionId: c.toolCallId,
          attempt: 1,
          sessionId: 'b0',
          turn: 1,
          toolCallId: c.toolCallId,
          signal,
          heartbeat: () => undefined,
        });
        return toolResultMessage({ id: c.toolCallId, name: c.name }, { result });
      }),
    );
    messages.push(...results);
  }
  return { text: '', calls };
}
