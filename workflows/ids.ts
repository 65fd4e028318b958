// The workflow IDs of sessions and turns: the one place that builds and parses them. Pure and
// sandbox-safe: the session workflow, the worker and the client use the same functions.
//
//   session   session-<sessionId>
//   turn      session-<sessionId>-turn-<n>        n = 1, 2, 3, … (digits, no sign, no leading zero)
//
// And the IDs of what a turn has notified about its parks (workflows/notifyParks.ts):
//
//   notify activity   <executionId>-notify-<park>   park = approval | question | recovery-<n>
//   notify queue      <turn's task queue>-notify    where the notifiers (apps/approvals/notifier.ts) poll
//
// Why no two inputs share an ID (test/unit/ids.test.ts checks it with fast-check):
// - two sessions: `session-` + s is injective in s;
// - a session and a turn: a turn ID ends in `-turn-<digits>`, and a session ID that ends so is
//   refused (sessionIdProblem), so a session's ID is never a turn's ID;
// - two turns: n has no '-', so the last `-turn-` of a turn ID splits it in exactly one way.
// Every ID a valid session had before this rule is unchanged: only the refused ids could collide.

/** The session ID's characters (the CLI, the library, the approvals app and the session check it). */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/;
/** What a turn ID ends with; a session ID that ends so would be another session's turn ID. */
const TURN_SUFFIX = /-turn-\d+$/;
const PREFIX = 'session-';
const TURN_ID = /^(.+)-turn-([1-9][0-9]*)$/;

/** Why `sessionId` cannot name a session (one line that says what to do), or undefined when it can. */
export function sessionIdProblem(sessionId: unknown): string | undefined {
  if (typeof sessionId !== 'string' || !SESSION_ID.test(sessionId))
    return `invalid session id '${String(sessionId)}': use 1-100 letters, digits, '.', '_', ':' or '-', starting with a letter or digit`;
  if (TURN_SUFFIX.test(sessionId))
    return `invalid session id '${sessionId}': it ends in '-turn-<digits>', so its workflow ID would be a turn's (session-<id>-turn-<n>); use another id, e.g. '${sessionId.replace(/-turn-(\d+)$/, '-turn$1')}'`;
  return undefined;
}

/** Why `turn` cannot number a turn, or undefined: turns count 1, 2, 3, … */
export function turnProblem(turn: unknown): string | undefined {
  return typeof turn === 'number' && Number.isSafeInteger(turn) && turn >= 1
    ? undefined
    : `invalid turn '${String(turn)}': turns are numbered 1, 2, 3, …`;
}

/** The session workflow's ID, for a session ID that sessionIdProblem accepts. */
export const sessionWorkflowId = (sessionId: string): string => `${PREFIX}${sessionId}`;

/** The turn workflow's ID, for an accepted session ID and a turn that turnProblem accepts. */
export const turnWorkflowId = (sessionId: string, turn: number): string => `${PREFIX}${sessionId}-turn-${turn}`;

export type ParsedWorkflowId =
  { kind: 'session'; sessionId: string } | { kind: 'turn'; sessionId: string; turn: number };

/**
 * The session or turn an ID names: the inverse of the builders, undefined for any ID they cannot
 * build (another workflow's, a refused session id's, a turn number with a leading zero).
 */
export function parseWorkflowId(workflowId: string): ParsedWorkflowId | undefined {
  if (!workflowId.startsWith(PREFIX)) return undefined;
  const rest = workflowId.slice(PREFIX.length);
  const m = TURN_ID.exec(rest);
  if (m) {
    const turn = Number(m[2]);
    return sessionIdProblem(m[1]) || turnProblem(turn) ? undefined : { kind: 'turn', sessionId: m[1]!, turn };
  }
  return sessionIdProblem(rest) ? undefined : { kind: 'session', sessionId: rest };
}

/** The turn number of a turn workflow's ID, or undefined when the ID is not a turn's. */
export function turnOf(workflowId: string): number | undefined {
  const p = parseWorkflowId(workflowId);
  return p?.kind === 'turn' ? p.turn : undefined;
}

/**
 * Why a session workflow must not run under `workflowId` with this input, or undefined. The client
 * never starts one so; a raw start could, and would then build turn IDs (and execution IDs, the keys
 * of real effects) that belong to another session.
 */
export function sessionStartProblem(workflowId: string, sessionId: unknown): string | undefined {
  const problem = sessionIdProblem(sessionId);
  if (problem) return problem;
  const expected = sessionWorkflowId(sessionId as string);
  return workflowId === expected
    ? undefined
    : `session '${String(sessionId)}' must run as workflow ${expected}, not ${workflowId}: start it with that workflow ID`;
}

/**
 * The notify activity of one park of a call: one ID per execution ID and park, so a park is
 * scheduled once and a replay schedules the same activity. No tool activity's ID has `-notify-`
 * (theirs are the execution ID, `-<run>` or `-reconcile-…`).
 */
export const notifyActivityId = (executionId: string, park: string): string => `${executionId}-notify-${park}`;

/**
 * The task queue a turn's notify activities go to: its own queue's name plus `-notify`, so the
 * notifiers of a deployment poll one queue of their own and never take a turn's or a tool's task.
 */
export const notifyTaskQueue = (taskQueue: string): string => `${taskQueue}-notify`;
