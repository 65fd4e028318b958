import { ActivityFailure, ApplicationFailure, TimeoutFailure } from '@temporalio/workflow';
import { FAILURE } from './definitions';
import type { ExecutionOutcome, RefusedBeforeTool } from './policy';
import type { ToolHeartbeat } from './types';

/** Failure types by which the execute activity says the tool was definitely not applied. */
export const NOT_APPLIED_TYPES: readonly string[] = [
  FAILURE.toolFailure,
  FAILURE.notRegistered,
  FAILURE.invalidArguments,
];

/** The failure types raised before the adapter is called: they speak for this attempt only. */
const REFUSED_BEFORE_TOOL: Readonly<Record<string, RefusedBeforeTool>> = {
  [FAILURE.notRegistered]: 'not_registered',
  [FAILURE.invalidArguments]: 'invalid_arguments',
};

/** Maps an execute activity failure to "definitely not applied" or "unknown". */
export function classifyToolFailure(err: unknown): ExecutionOutcome {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && cause.type && NOT_APPLIED_TYPES.includes(cause.type)) {
    const refused = REFUSED_BEFORE_TOOL[cause.type];
    return { kind: 'not_applied', error: cause.message, ...(refused ? { refused } : {}) };
  }
  // Only the execute activity's own code raises NotStarted, before the adapter is called (an
  // ApplicationFailure from the adapter is re-raised as an unknown outcome).
  if (cause instanceof ApplicationFailure && cause.type === FAILURE.notStarted)
    return { kind: 'not_started', reason: cause.message };
  if (cause instanceof TimeoutFailure) {
    // Heartbeats are throttled, so the last one's phase may lag behind; the marker does not: it is
    // awaited before the adapter is called, and every heartbeat after it carries it.
    const hb = cause.lastHeartbeatDetails as Partial<ToolHeartbeat> | undefined;
    return {
      kind: 'unknown',
      reason: `${cause.timeoutType?.toLowerCase().replace(/_/g, '-') ?? 'activity'} timeout (worker lost or stuck)`,
      ...(typeof hb?.attempt === 'number' ? { attempt: hb.attempt } : {}),
      ...(hb?.phase ? { phase: hb.phase } : {}),
      marked: hb?.dispatched === true,
    };
  }
  return { kind: 'unknown', reason: messageOf(err) };
}

/** The message of a failure, looking through ActivityFailure's generic wrapper. */
export function messageOf(err: unknown): string {
  let e: unknown = err;
  // ActivityFailure's own message is generic; the cause says what happened.
  while (e instanceof ActivityFailure && e.cause) e = e.cause;
  return e instanceof Error ? e.message : String(e);
}
