import { Context } from '@temporalio/activity';
import {
  ActivityCancelledError,
  ActivityNotFoundError,
  ActivityPausedError,
  ActivityResetError,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../workflows/definitions';
import { msToNumber } from '@temporalio/common/lib/time';
import type {
  CompactInput,
  ContextRef,
  ModelActivityInput,
  ModelStep,
  PlanCallsInput,
  PlannedCall,
  ReconcileAnswer,
  ToolActivityInput,
  ToolActivityResult,
  ToolHeartbeat,
  TurnActivities,
} from '../workflows/types';
import type { ContextStore } from '../runtime/contextStore';
import { faultPoint } from './faults';
import { tagToolSpan } from './tracing';
import { compact, contextDeps, readContext, storeStep } from './context';
import type { ActivityClock } from './serverClock';
import { activityClock, windowPassed } from './serverClock';
import type { Limits } from './limits';
import { DEFAULT_LIMITS, capResult, capText, capToolCalls } from './limits';
import type { ModelProvider } from './model';
import { ModelError, modelCall } from './model';
import type { ToolRegistry } from './registry';
import { describeIssues } from './registry';
import type { ToolContext } from './tool';
import type { Tool } from './tool';
import { ToolFailure, UnknownOutcome } from './tool';
import { scheduleActivities } from './schedules';
import type { ScheduleActivities } from '../workflows/scheduled';

/**
 * Why the external system may no longer remember this call's key, or undefined while it must. The
 * first attempt's time is the server's (workflow time), so now is too (activities/serverClock.ts);
 * a local activity (a read) carries only the worker's own stamps, so it is measured on that clock.
 */
async function keyMayBeForgotten(
  tool: Tool,
  input: ToolActivityInput,
  info: Context['info'],
  clock: ActivityClock,
): Promise<string | undefined> {
  if (tool.idempotencyWindow === undefined) return undefined;
  const windowMs = msToNumber(tool.idempotencyWindow);
  if (info.isLocal) return windowPassed({ firstMs: info.scheduledTimestampMs, nowMs: Date.now(), windowMs });
  const firstMs = input.firstScheduledAt ?? info.scheduledTimestampMs;
  // Passed by the attempt's scheduled time already: no need to ask. Otherwise the time it waited for
  // a worker counts too, and without it nothing bounds that wait: a person decides.
  const early = windowPassed({ firstMs, nowMs: clock.now(), windowMs });
  if (early) return early;
  const unknown = await clock.refine();
  if (unknown)
    return `the Temporal server did not say when this attempt started (${unknown}), so the time since the first attempt is not known`;
  return windowPassed({ firstMs, nowMs: clock.now(), windowMs });
}

/** A retry after the external system may have forgotten the key could apply twice: escalate instead. */
async function checkIdempotencyWindow(
  tool: Tool,
  input: ToolActivityInput,
  info: Context['info'],
  clock: ActivityClock,
): Promise<void> {
  const retry = input.attemptBase > 0 || info.attempt > 1;
  const passed = retry ? await keyMayBeForgotten(tool, input, info, clock) : undefined;
  if (passed) throw new UnknownOutcome(`not retried: ${passed}`);
}

const FINAL_ANSWERS = [ActivityCancelledError, ActivityNotFoundError, ActivityPausedError, ActivityResetError];

/**
 * Records "dispatched" as an awaited heartbeat: the server keeps it with this attempt before it
 * answers, refuses it once the attempt timed out or was replaced, and answers a cancel request
 * (test/heartbeatMarker.test.ts checks each). Retries a failed RPC; any failure here means the
 * adapter was not called.
 */
async function recordDispatchHeartbeat(ctx: Context, details: ToolHeartbeat): Promise<void> {
  let last: unknown;
  for (let i = 0; i < 3; i++) {
    try {
      return await ctx.client.activity.heartbeat(ctx.info.taskToken, details);
    } catch (err) {
      last = err;
      // The server's answer is final: the attempt is cancelled, timed out, replaced, paused or reset.
      if (FINAL_ANSWERS.some((E) => err instanceof E)) break;
      await new Promise((r) => setTimeout(r, 200 * (i + 1)));
    }
  }
  // The server may have kept the marker although it refused it (a cancel, pause or reset answer) or
  // its answer was lost: take it back, best effort, so a crash before this attempt reports does not
  // park a call that never ran.
  await ctx.client.activity
    .heartbeat(ctx.info.taskToken, { attempt: details.attempt, phase: 'starting' })
    .catch(() => undefined);
  const why = last instanceof ActivityCancelledError ? 'the turn is being cancelled' : (last as Error)?.message;
  throw ApplicationFailure.nonRetryable(`could not record dispatch, tool not called: ${why}`, FAILURE.notStarted);
}

/** Aborts on what must stop the tool (its timeout, the worker shutting down), not on a cancel request. */
function stopsTheTool(ctx: Context): AbortSignal {
  const stop = new AbortController();
  const onAbort = (): void => {
    if (!ctx.cancellationDetails?.cancelRequested) stop.abort(ctx.cancellationSignal.reason);
  };
  if (ctx.cancellationSignal.aborted) onAbort();
  else ctx.cancellationSignal.addEventListener('abort', onAbort, { once: true });
  return stop.signal;
}

export interface ActivityDeps {
  registry: ToolRegistry;
  model: ModelProvider;
  /** Default: DEFAULT_LIMITS (the worker passes limitsFromEnv). Arguments are checked by the registry. */
  limits?: Partial<Limits>;
  /** Where transcripts sent by reference are kept (the worker's payload store); without it, such a model call fails. */
  contextStore?: ContextStore;
  /** The budget of what the model sees, in tokens (OPENWORKER_CONTEXT_TOKENS; else the model's window, else 100,000). */
  contextTokens?: number;
}

/** The activities a worker registers; the turn workflow schedules them by these names. */
/** The session a model call's stored messages belong to (S3 keys name it). */
const scopeOf = (sessionId: string) => ({ namespace: Context.current().info.namespace, sessionId });

export function createActivities({
  registry,
  model,
  limits: given,
  contextStore,
  contextTokens,
}: ActivityDeps): TurnActivities & ScheduleActivities {
  const context = contextDeps(contextStore, model, contextTokens);
  const limits: Limits = { ...DEFAULT_LIMITS, ...given };
  const resultLimit = (tool: Tool | undefined): number => tool?.maxResultBytes ?? limits.maxResultBytes;
  return {
    callModel: (input: ModelActivityInput): Promise<ModelStep> =>
      modelCall(async (signal, onText, textDone) => {
        const stored = await readContext(context, input.context);
        const response = await model.generate(
          {
            sessionId: input.sessionId,
            turn: input.turn,
            iteration: input.iteration,
            messages: stored.view,
            tools: registry.descriptors(),
          },
          { signal, onText },
        );
        textDone();
        if (!response || typeof response.text !== 'string' || !Array.isArray(response.toolCalls)) {
          throw new ModelError(`model ${model.name} returned a malformed response (expected { text, toolCalls[] })`);
        }
        // Enforced here, in the activity, so the turn's history keeps its shape: a bounded step.
        const { kept, overflow } = capToolCalls(response.toolCalls, limits.maxToolCalls);
        const calls = registry.plan(overflow ? [...kept, overflow.call] : kept);
        if (overflow) calls[kept.length] = { ...calls[kept.length]!, invalid: overflow.reason };
        const text = capText(response.text, limits.maxModelTextBytes);
        return storeStep(context, input.context, stored, {
          text,
          calls,
          iteration: input.iteration,
          at: `${input.sessionId}/${input.turn}/${input.iteration}`,
          scope: scopeOf(input.sessionId),
        });
      }, input.iteration),

    compactContext: (input: CompactInput): Promise<ContextRef> =>
      modelCall((signal) =>
        compact(context, model, input, signal, (t) => capText(t, limits.maxModelTextBytes), scopeOf(input.sessionId)),
      ),

    async listTools(): Promise<string[]> {
      return registry.names();
    },

    async planToolCalls({ calls }: PlanCallsInput): Promise<PlannedCall[]> {
      return registry.plan(Array.isArray(calls) ? calls : []);
    },

    async executeTool(input: ToolActivityInput): Promise<ToolActivityResult> {
      const ctx = Context.current();
      const clock = activityClock(ctx);
      const startedLocal = performance.now();
      const { info } = ctx;
      const attempt = input.attemptBase + info.attempt;
      tagToolSpan({ tool: input.tool, executionId: input.executionId, attempt });
      // A refusal proves only that this attempt did not run: after an earlier attempt of this run
      // (which may have called the tool, on a build that still had it), the outcome stays unknown.
      const refuse = (why: string, type: string): ApplicationFailure =>
        info.attempt > 1
          ? ApplicationFailure.nonRetryable(
              `outcome unknown: attempt ${info.attempt} was refused before the tool ran (${why}), and an earlier attempt may have applied`,
              FAILURE.unknownFinal,
            )
          : ApplicationFailure.nonRetryable(why, type);
      const tool = registry.get(input.tool);
      if (!tool)
        throw refuse(`tool '${input.tool}' is not registered on this worker; not executed`, FAILURE.notRegistered);
      const parsed = tool.input.safeParse(input.arguments);
      if (!parsed.success)
        throw refuse(`invalid arguments for '${tool.name}': ${describeIssues(parsed.error)}`, FAILURE.invalidArguments);
      // Heartbeats carry the phase, so a lost attempt still tells the turn how far it got.
      let phase: ToolHeartbeat['phase'] = 'starting';
      let markerRecorded = false;
      const marked = (): ToolHeartbeat => ({ attempt, phase, ...(markerRecorded ? { dispatched: true } : {}) });
      const beat = (): void => ctx.heartbeat(marked());
      // With the heartbeat marker, nothing beats before it: a throttled beat sent after it would erase it.
      let timer: NodeJS.Timeout | undefined;
      const beatOn = (now = true): void => {
        if (now) beat();
        timer ??= setInterval(beat, Math.max(250, Math.floor((info.heartbeatTimeoutMs ?? 20_000) / 4)));
      };
      // A local activity (a read) has no heartbeat: the worker's core would log each beat as an unknown activity.
      if (!input.protect && !info.isLocal) beatOn();
      // The tool stops at its own start-to-close even if this worker cannot hear the server: the
      // turn's reconcile fence relies on no attempt outliving that window. A turn that records the
      // marker by heartbeat lets a dispatched tool finish when the turn is cancelled. Measured on the
      // monotonic clock: a step of the host's wall clock (NTP fixing a skew) must not extend it.
      const pastDeadline = (): boolean => performance.now() - startedLocal >= info.startToCloseTimeoutMs;
      const signal = AbortSignal.any([
        input.protect ? stopsTheTool(ctx) : ctx.cancellationSignal,
        AbortSignal.timeout(info.startToCloseTimeoutMs),
      ]);
      // From here on the outcome may be real: nothing the adapter throws can claim "not started".
      let adapterCalled = false;
      try {
        await faultPoint('tool.before_dispatch', tool.name, input.executionId);
        if (input.protect) {
          // A protected run has one attempt; the server starts another only after a pause or a reset
          // of the activity, and the first may have called the tool. A person decides.
          if (info.attempt > 1)
            throw ApplicationFailure.nonRetryable(
              `outcome unknown: attempt ${info.attempt} of one run (the activity was paused or reset); not called again`,
              FAILURE.unknownFinal,
            );
          await recordDispatchHeartbeat(ctx, { attempt, phase: 'dispatched', dispatched: true });
          markerRecorded = true;
          phase = 'dispatched';
          // The heartbeat marker was itself a beat with these details: the next is due in a quarter
          // of the timeout, not now (each beat costs the server ~2 ms, bench:breakdown).
          beatOn(false);
          await faultPoint('tool.after_dispatch', tool.name, input.executionId);
        }
        // Before the last two checks: it may ask the server when this attempt started.
        await checkIdempotencyWindow(tool, input, info, clock);
        if (signal.aborted)
          throw ApplicationFailure.nonRetryable('cancelled before the tool was called', FAILURE.notStarted);
        // A paused or partitioned attempt that wakes up past its own window must not act: the turn's
        // fences (reconcile, a decided retry) count on no attempt calling the adapter after it.
        if (pastDeadline()) {
          throw ApplicationFailure.nonRetryable(
            'past its start-to-close window before the tool was called',
            FAILURE.notStarted,
          );
        }
        phase = 'executing';
        const toolCtx: ToolContext = {
          executionId: input.executionId,
          attempt,
          sessionId: input.sessionId,
          turn: input.turn,
          toolCallId: input.toolCallId,
          signal,
          heartbeat: (details?: unknown) => ctx.heartbeat({ ...marked(), details }),
        };
        adapterCalled = true;
        const result = capResult(await tool.execute(parsed.data, toolCtx), resultLimit(tool));
        await faultPoint('tool.after_execute', tool.name, input.executionId);
        return { result, attempt };
      } catch (err) {
        if (err instanceof ApplicationFailure && !adapterCalled) throw err;
        if (err instanceof ApplicationFailure && err.nonRetryable)
          throw ApplicationFailure.nonRetryable(`outcome unknown: ${err.message}`, FAILURE.unknownFinal);
        if (err instanceof UnknownOutcome)
          throw ApplicationFailure.nonRetryable(`outcome unknown: ${err.message}`, FAILURE.unknownFinal);
        if (err instanceof ToolFailure) {
          throw ApplicationFailure.create({
            message: err.message,
            type: FAILURE.toolFailure,
            nonRetryable: true,
            details: err.details === undefined ? [] : [err.details],
          });
        }
        // Anything else from an adapter that may have run: the outcome is unknown. Retryable only for
        // tools that allow it: a paused protected activity would otherwise be retried on unpause.
        const message = `outcome unknown: ${(err as Error)?.message ?? String(err)}`;
        throw input.protect
          ? ApplicationFailure.nonRetryable(message, FAILURE.unknownFinal)
          : ApplicationFailure.retryable(message, FAILURE.outcomeUnknown);
      } finally {
        if (timer) clearInterval(timer);
      }
    },

    async reconcileTool(input: ToolActivityInput): Promise<ReconcileAnswer> {
      const ctx = Context.current();
      const clock = activityClock(ctx);
      const tool = registry.get(input.tool);
      if (!tool?.reconcile)
        return { status: 'unknown', reason: `tool '${input.tool}' has no reconcile() on this worker` };
      const parsed = tool.input.safeParse(input.arguments);
      if (!parsed.success)
        return { status: 'unknown', reason: `arguments no longer validate: ${describeIssues(parsed.error)}` };
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
          return { status: 'applied', result: capResult(answer.result, resultLimit(tool)) };
        case 'not_applied': {
          // "Never heard of this key" proves nothing once the system may have forgotten it.
          const forgotten = await keyMayBeForgotten(tool, input, ctx.info, clock);
          return forgotten
            ? { status: 'unknown', reason: `the lookup found nothing, but ${forgotten}` }
            : { status: 'not_applied' };
        }
        case 'unknown':
          return { status: 'unknown', ...(answer.reason ? { reason: String(answer.reason) } : {}) };
        default:
          return {
            status: 'unknown',
            reason: `reconcile() of '${tool.name}' returned ${JSON.stringify(answer)?.slice(0, 100)}`,
          };
      }
    },
    // A scheduled turn's look at its session (workflows/scheduledTurn.ts).
    ...scheduleActivities,
  };
}
