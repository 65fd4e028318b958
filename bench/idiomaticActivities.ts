import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ModelProvider } from '../activities/model';
import type { ToolRegistry } from '../activities/registry';
import type { IdiomaticActivities } from './idiomaticWorkflow';

/** B1's activities: the model, and one tool call (plain activities: no dispatch marker, Temporal's default retries). */
export function idiomaticActivities(model: ModelProvider, registry: ToolRegistry): IdiomaticActivities {
  return {
    async callModel(messages) {
      const r = await model.generate(
        { sessionId: 'b1', turn: 1, iteration: 1, messages, tools: registry.descriptors() },
        { signal: Context.current().cancellationSignal },
      );
      return {
        text: r.text,
        toolCalls: r.toolCalls.map((c) => ({ ...c, needsApproval: !!registry.get(c.name)?.requiresApproval })),
      };
    },
    async runTool(call) {
      const ctx = Context.current();
      const tool = registry.get(call.name);
      const input = tool?.input.safeParse(call.arguments);
      if (!tool || !input?.success)
        throw ApplicationFailure.nonRetryable(`no tool '${call.name}' takes these arguments`);
      const turnId = ctx.info.workflowExecution?.workflowId ?? 'b1';
      return tool.execute(input.data, {
        executionId: `${turnId}/${call.id}`,
        attempt: ctx.info.attempt,
        sessionId: turnId,
        turn: 1,
        toolCallId: call.id,
        signal: ctx.cancellationSignal,
        heartbeat: () => ctx.heartbeat(),
      });
    },
  };
}
