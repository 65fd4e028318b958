import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { dispatchUpdate } from '../workflows/definitions';
import type {
  ModelActivityInput,
  ModelStep,
  ReconcileActivityResult,
  ToolActivityInput,
  ToolActivityResult,
  ToolHeartbeat,
  TurnActivities,
} from '../workflows/types';
import { faultPoint } from './faults';
import type { ModelProvider } from './model';
import { ModelError } from './model';
import type { ToolRegistry } from './registry';
import { describeIssues } from './registry';
import type { ToolContext } from './tool';
import { ToolFailure } from './tool';

export interface ActivityDeps {
  registry: ToolRegistry;
  model: ModelProvider;
}

/** The activities a worker registers; the turn workflow schedules them by these names. */
export function createActivities({ registry, model }: ActivityDeps): TurnActivities {
  return {
    async callModel(input: ModelActivityInput): Promise<ModelStep> {
      const ctx = Context.current();
      const beat = setInterval(() => ctx.heartbeat(), 10_000);
      try {
        const response = await model.generate(
          { sessionId: input.sessionId, turn: input.turn, iteration: input.iteration, messages: input.messages, tools: registry.descriptors() },
          { signal: ctx.cancellationSignal },
        );
        if (!response || typeof response.text !== 'string' || !Array.isArray(response.toolCalls)) {
          throw new ModelError(`model ${model.name} returned a malformed response (expected { text, toolCalls[] })`);
        }
        return { text: response.text, calls: registry.plan(response.toolCalls) };
      } catch (err) {
        if (err instanceof ModelError && !err.retryable) throw ApplicationFailure.nonRetryable(err.message, 'ModelError');
        throw err;
      } finally {
        clearInterval(beat);
      }
    },

    async executeTool(input: ToolActivityInput): Promise<ToolActivityResult> {
      const ctx = Context.current();
      const { info } = ctx;
      const attempt = input.attemptBase + info.attempt;
      const tool = registry.get(input.tool);
      if (!tool) {
        throw ApplicationFailure.nonRetryable(`tool '${input.tool}' is not registered on this worker; not executed`, 'ToolNotRegistered');
      }
      const parsed = tool.input.safeParse(input.arguments);
      if (!parsed.success) {
        throw ApplicationFailure.nonRetryable(`invalid arguments for '${tool.name}': ${describeIssues(parsed.error)}`, 'InvalidToolArguments');
      }
      // Heartbeats carry the phase, so a lost attempt still tells the turn how far it got.
      let phase: ToolHeartbeat['phase'] = 'starting';
      const beat = (): void => ctx.heartbeat({ attempt, phase } satisfies ToolHeartbeat);
      beat();
      const timer = setInterval(beat, Math.max(250, Math.floor((info.heartbeatTimeoutMs ?? 20_000) / 4)));
      try {
        await faultPoint('tool.before_dispatch', tool.name, input.executionId);
        if (input.protect) {
          const wf = info.workflowExecution!;
          let answer;
          try {
            answer = await ctx.client.workflow.getHandle(wf.workflowId, wf.runId).executeUpdate(dispatchUpdate, {
              args: [{ executionId: input.executionId, activityId: info.activityId, attempt }],
              updateId: `dispatch-${info.activityId}-${info.attempt}`,
            });
          } catch (err) {
            // The turn's ledger decides: if the marker landed, the outcome is unknown; if not, it reruns.
            throw ApplicationFailure.nonRetryable(`could not record dispatch: ${(err as Error).message}`, 'DispatchFailed');
          }
          if (!answer.proceed) throw ApplicationFailure.nonRetryable(`dispatch refused: ${answer.reason}; not executed`, 'DispatchRefused');
          phase = 'dispatched';
          beat();
          await faultPoint('tool.after_dispatch', tool.name, input.executionId);
        }
        phase = 'executing';
        const toolCtx: ToolContext = {
          executionId: input.executionId,
          attempt,
          sessionId: input.sessionId,
          turn: input.turn,
          toolCallId: input.toolCallId,
          signal: ctx.cancellationSignal,
          heartbeat: (details?: unknown) => ctx.heartbeat({ attempt, phase, details }),
        };
        const result = await tool.execute(parsed.data, toolCtx);
        await faultPoint('tool.after_execute', tool.name, input.executionId);
        return { result: result === undefined ? null : result, attempt };
      } catch (err) {
        if (err instanceof ApplicationFailure) throw err;
        if (err instanceof ToolFailure) {
          throw ApplicationFailure.create({ message: err.message, type: 'ToolFailure', nonRetryable: true, details: err.details === undefined ? [] : [err.details] });
        }
        // Anything else from an adapter that may have run: the outcome is unknown.
        throw ApplicationFailure.retryable(`outcome unknown: ${(err as Error)?.message ?? String(err)}`, 'ToolOutcomeUnknown');
      } finally {
        clearInterval(timer);
      }
    },

    async reconcileTool(input: ToolActivityInput): Promise<ReconcileActivityResult> {
      const ctx = Context.current();
      const tool = registry.get(input.tool);
      if (!tool?.reconcile) return { status: 'unknown', reason: `tool '${input.tool}' has no reconcile() on this worker` };
      const parsed = tool.input.safeParse(input.arguments);
      if (!parsed.success) return { status: 'unknown', reason: `arguments no longer validate: ${describeIssues(parsed.error)}` };
      const answer = await tool.reconcile(parsed.data, {
        executionId: input.executionId,
        attempt: input.attemptBase + ctx.info.attempt,
        sessionId: input.sessionId,
        turn: input.turn,
        toolCallId: input.toolCallId,
        signal: ctx.cancellationSignal,
        heartbeat: (details?: unknown) => ctx.heartbeat(details),
      });
      switch (answer?.status) {
        case 'applied':
          return { status: 'applied', result: answer.result === undefined ? null : answer.result };
        case 'not_applied':
          return { status: 'not_applied' };
        case 'unknown':
          return { status: 'unknown', ...(answer.reason ? { reason: String(answer.reason) } : {}) };
        default:
          return { status: 'unknown', reason: `reconcile() of '${tool.name}' returned ${JSON.stringify(answer)?.slice(0, 100)}` };
      }
    },
  };
}
