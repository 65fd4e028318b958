import type { RetryPolicy } from '@temporalio/workflow';
import {
  ActivityCancellationType,
  ActivityFailure,
  CancelledFailure,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
} from '@temporalio/workflow';
import { FAILURE } from './definitions';
import { NOT_APPLIED_TYPES, classifyToolFailure, messageOf } from './failures';
import type { ExecutionOutcome } from './policy';
import { attemptsPerRun, isProtected } from './policy';
import type { createShields } from './shields';
import type {
  LedgerEntry,
  PlannedCall,
  ReconcileAnswer,
  ToolActivityInput,
  ToolSpec,
  TurnActivities,
  TurnInput,
} from './types';

// The Temporal side of one tool call's steps (call.ts): which activity runs an attempt or asks the
// external system, with which options, and what its outcome says. Nothing here decides what comes
// next; policy.ts does.

// Tool activities get per-call options (activity ID, summary, timeouts, retry) from the tool's spec.
const { executeTool } = proxyActivities<TurnActivities>({ startToCloseTimeout: '2 minutes' });

// Reads run in the turn's workflow task (see ToolSpec.local); the call's options set the rest.
const { executeTool: executeLocally } = proxyLocalActivities<TurnActivities>({ startToCloseTimeout: '2 minutes' });

// Asking the external system is read-only, so ordinary retries are safe.
const { reconcileTool } = proxyActivities<TurnActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', maximumAttempts: 3 },
});

/**
 * Where a protected call's attempt records "dispatched": `heartbeat`, an awaited heartbeat the
 * attempt sends before it calls the tool; this turn learns it from the outcome (no workflow task).
 * Unprotected calls record none.
 */
export type DispatchMarker = 'heartbeat' | 'none';

export const dispatchMarkerOf = (spec: ToolSpec): DispatchMarker =>
  isProtected(spec.effect, spec.recovery) ? 'heartbeat' : 'none';

export function toolActivityInput(
  turn: Pick<TurnInput, 'sessionId' | 'turn'>,
  entry: LedgerEntry,
  call: PlannedCall,
): ToolActivityInput {
  const spec = call.spec!;
  const firstScheduledAt = firstScheduled(entry);
  return {
    sessionId: turn.sessionId,
    turn: turn.turn,
    toolCallId: entry.toolCallId,
    executionId: entry.executionId,
    tool: entry.tool,
    arguments: entry.arguments,
    attemptBase: (entry.runs - 1) * attemptsPerRun(spec.effect, spec.recovery, spec.maxAttempts),
    protect: isProtected(spec.effect, spec.recovery),
    ...(firstScheduledAt ? { firstScheduledAt } : {}),
  };
}

/** Runs one attempt of the call (the entry already records it as scheduled) and classifies its outcome. */
export async function runAttempt(a: {
  turn: Pick<TurnInput, 'sessionId' | 'turn'>;
  entry: LedgerEntry;
  call: PlannedCall;
  activityId: string;
  marker: DispatchMarker;
  shields: ReturnType<typeof createShields>;
}): Promise<ExecutionOutcome> {
  const { entry, call, activityId, marker, shields } = a;
  const spec = call.spec!;
  const byHeartbeat = marker === 'heartbeat';
  try {
    const retry = retryOf(spec, marker !== 'none');
    const input = toolActivityInput(a.turn, entry, call);
    const schedule = () =>
      spec.local
        ? executeLocally.executeWithOptions(
            { summary: summary(entry, 'execute'), startToCloseTimeout: spec.startToCloseMs, retry },
            [input],
          )
        : executeTool.executeWithOptions(
            {
              activityId,
              summary: summary(entry, 'execute'),
              startToCloseTimeout: spec.startToCloseMs,
              heartbeatTimeout: spec.heartbeatMs,
              retry,
              // A cancel is a question to the attempt (did it dispatch?), so its answer is awaited.
              ...(byHeartbeat ? { cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED } : {}),
            },
            [input],
          );
    // A cancel lets an external effect in flight finish (or park) instead of abandoning it.
    const r = spec.effect === 'external' ? await shields.run(schedule, { askToStop: byHeartbeat }) : await schedule();
    return { kind: 'succeeded', result: r.result, attempt: r.attempt };
  } catch (err) {
    // Asked to stop before any worker took it, an activity is cancelled by the server at once; once
    // taken, this one never reports itself cancelled (every failure it raises is its own).
    if (byHeartbeat && err instanceof ActivityFailure && err.cause instanceof CancelledFailure)
      return { kind: 'not_started', reason: 'cancelled with the turn before any worker started it' };
    if (isCancellation(err)) throw err;
    return classifyToolFailure(err);
  }
}

/** The activity ID of the next reconcile question in this run: one per question, never reused. */
export function reconcileActivityId(entry: LedgerEntry): string {
  const prefix = `${entry.executionId}-reconcile-${entry.runs}`;
  const asked = entry.events.filter(
    (e) => e.type === 'reconciling' && e.activityId !== undefined && String(e.activityId).startsWith(prefix),
  ).length;
  return `${prefix}${asked ? `-${asked + 1}` : ''}`;
}

/** Asks the tool's reconcile(); a failure to ask is an unknown answer, never an error. */
export async function askReconcile(
  turn: Pick<TurnInput, 'sessionId' | 'turn'>,
  entry: LedgerEntry,
  call: PlannedCall,
  activityId: string,
): Promise<ReconcileAnswer> {
  try {
    return await reconcileTool.executeWithOptions({ activityId, summary: summary(entry, 'reconcile') }, [
      toolActivityInput(turn, entry, call),
    ]);
  } catch (err) {
    if (isCancellation(err)) throw err;
    return { status: 'unknown', reason: `reconcile failed: ${messageOf(err)}` };
  }
}

/** Protected calls are never retried by Temporal; the rest retry what may succeed next time. */
const retryOf = (spec: ToolSpec, protect: boolean): RetryPolicy =>
  protect
    ? { maximumAttempts: 1 }
    : {
        maximumAttempts: spec.maxAttempts,
        initialInterval: '1s',
        maximumInterval: '30s',
        nonRetryableErrorTypes: [...NOT_APPLIED_TYPES, FAILURE.unknownFinal, FAILURE.notStarted],
      };

const summary = (entry: LedgerEntry, what: string): string =>
  `${what} ${entry.tool} ${entry.executionId}${entry.target ? ` → ${entry.target}` : ''}`.slice(0, 190);

function firstScheduled(entry: LedgerEntry): number | undefined {
  const at = entry.events.find((e) => e.type === 'scheduled')?.at;
  return at ? Date.parse(at) : undefined;
}
