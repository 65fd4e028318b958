import type {
  CallState,
  LedgerEntry,
  PlannedCall,
  RecoveryDecision,
  RecoveryPolicy,
  ToolEffect,
  TurnState,
} from './types';
import { CALL_STATES, TERMINAL_CALL_STATES } from './types';
import { AUTO_BY_POLICY } from './deciders';

// The ledger state machine, pure: the turn workflow feeds it events and stores what it returns.

export type LedgerInput =
  | { type: 'approved'; by: string; grant?: string; signed?: SignedBy }
  | { type: 'rejected'; by: string; reason?: string }
  /** Approve with edits, before its `approved`: the call runs with `arguments` (digest `to`) instead (workflows/edits.ts). */
  | { type: 'edited'; by: string; from: string; to: string; arguments: unknown; target?: string }
  | { type: 'scheduled'; activityId: string }
  | { type: 'dispatched'; activityId: string; attempt: number }
  | { type: 'succeeded'; result: unknown; via: 'execute' | 'reconcile' | 'recovery'; attempt?: number }
  | { type: 'failed'; error: string; via: 'execute' | 'recovery' | 'not_dispatched' }
  | { type: 'outcome_unknown'; reason: string; attempt?: number; lastHeartbeatPhase?: string }
  /** The attempt proved it never called the adapter (NotStarted): the dispatch marker no longer stands. */
  | { type: 'not_started'; reason: string }
  | { type: 'reconciling'; activityId: string }
  | { type: 'reconciled'; answer: 'applied' | 'not_applied' | 'unknown'; reason?: string }
  | { type: 'recovery_required'; reason: string }
  | {
      type: 'recovery_decided';
      decision: RecoveryDecision;
      by: string;
      reason?: string;
      signed?: SignedBy;
      skipFence?: boolean;
    }
  /** A decided retry waits until the last dispatched attempt can no longer be running. */
  | { type: 'retry_fenced'; until: string; attempt: number; by: string }
  /** A decision, or a standing approval, that the approval policy or a signature check refused. */
  | { type: 'decision_refused'; kind: 'approve' | 'reject' | 'recover' | 'grant'; by?: string; why: string }
  /** A notifier took the notification of this park (workflows/notifications.ts); it holds it until `until`. */
  /** The notifier that claimed this park reports it sent. */
  | { type: 'notified'; park: string; by: string; delivered: number; failed: number }
  /** ask_user: a person answered; the answer is the call's result (workflows/answers.ts). */
  | { type: 'answered'; by: string; answer: string; decisionId?: string }
  /** ask_user: no answer came by the deadline, or the turn was cancelled first. */
  | { type: 'unanswered'; reason: string };

type SignedBy = { keyId: string; signedAt: string };

type From = readonly CallState[];

/** For each input: the states it may arrive in, and the state it leaves the entry in (`same` = unchanged). */
export const TRANSITIONS: Record<LedgerInput['type'], { from: From; to: CallState | 'same' }> = {
  approved: { from: ['awaiting_approval'], to: 'running' },
  rejected: { from: ['awaiting_approval'], to: 'rejected' },
  edited: { from: ['awaiting_approval'], to: 'same' },
  scheduled: { from: ['running', 'reconciling', 'recovery_required'], to: 'running' },
  dispatched: { from: ['running'], to: 'dispatched' },
  not_started: { from: ['running', 'dispatched'], to: 'running' },
  succeeded: { from: ['running', 'dispatched', 'reconciling', 'recovery_required'], to: 'succeeded' },
  failed: { from: ['running', 'dispatched', 'reconciling', 'recovery_required'], to: 'failed' },
  outcome_unknown: { from: ['running', 'dispatched'], to: 'same' },
  // From recovery_required: a person's retry asks first when the tool has reconcile().
  reconciling: { from: ['dispatched', 'reconciling', 'recovery_required'], to: 'reconciling' },
  reconciled: { from: ['reconciling'], to: 'same' },
  // From recovery_required too: a decided retry that never ran (the turn was cancelled) parks anew.
  recovery_required: { from: ['running', 'dispatched', 'reconciling', 'recovery_required'], to: 'recovery_required' },
  recovery_decided: { from: ['recovery_required'], to: 'same' },
  retry_fenced: { from: ['recovery_required'], to: 'same' },
  decision_refused: {
    from: CALL_STATES,
    to: 'same',
  },
  // The report may come after a decision moved the call on.
  notified: { from: CALL_STATES, to: 'same' },
  answered: { from: ['awaiting_answer'], to: 'succeeded' },
  unanswered: { from: ['awaiting_answer'], to: 'failed' },
};

export class LedgerTransitionError extends Error {
  constructor(entry: LedgerEntry, input: LedgerInput) {
    super(`ledger: '${input.type}' is not allowed for ${entry.toolCallId} in state '${entry.state}'`);
    this.name = 'LedgerTransitionError';
  }
}

export function newEntry(
  call: PlannedCall,
  executionId: string,
  iteration: number,
  at: string,
  invalid?: string,
): LedgerEntry {
  const why = invalid ?? call.invalid;
  const state: CallState = why
    ? 'invalid'
    : call.spec?.asks
      ? 'awaiting_answer'
      : call.spec?.requiresApproval
        ? 'awaiting_approval'
        : 'running';
  return {
    toolCallId: call.toolCallId,
    executionId,
    tool: call.name,
    ...(call.target !== undefined ? { target: call.target } : {}),
    argsDigest: call.argsDigest,
    arguments: call.arguments,
    ...(call.spec
      ? { effect: call.spec.effect, recovery: call.spec.recovery, hasReconcile: call.spec.hasReconcile }
      : {}),
    ...(call.approval ? { approval: call.approval } : {}),
    iteration,
    state,
    attempts: 0,
    runs: 0,
    dispatched: false,
    ...(why ? { error: why } : {}),
    // `auto` is the name shown; the kind is what checks ask (RESERVED_NAMES keeps people off it).
    ...(state === 'running' ? { approvedBy: 'auto', approver: AUTO_BY_POLICY } : {}),
    events: [
      {
        at,
        type: why ? 'invalid' : state === 'running' ? 'auto_approved' : state,
        ...(why ? { why } : {}),
      },
    ],
  };
}

export function applyLedger(entry: LedgerEntry, input: LedgerInput, at: string): LedgerEntry {
  const rule = TRANSITIONS[input.type];
  if (!rule.from.includes(entry.state)) throw new LedgerTransitionError(entry, input);
  // The result (and edited arguments) are kept once, on the entry, not again in its event.
  const {
    result: _result,
    arguments: _args,
    ...recorded
  } = input as LedgerInput & { result?: unknown; arguments?: unknown };
  const next: LedgerEntry = {
    ...entry,
    state: rule.to === 'same' ? entry.state : rule.to,
    events: [...entry.events, { at, ...recorded }],
  };
  switch (input.type) {
    case 'approved':
      next.approvedBy = input.by;
      // A signal's approval is a person's; a grant's names its grantor, but no one approved this call.
      next.approver = input.grant ? { kind: 'auto', why: 'grant' } : { kind: 'person', name: input.by };
      if (input.grant) next.grantId = input.grant;
      if (input.signed) next.signedApproval = input.signed;
      break;
    case 'edited':
      next.originalArguments = entry.originalArguments ?? entry.arguments;
      next.originalDigest = entry.originalDigest ?? entry.argsDigest;
      next.arguments = input.arguments;
      next.argsDigest = input.to;
      next.editedBy = input.by;
      if (input.target !== undefined) next.target = input.target;
      else delete next.target;
      break;
    case 'rejected':
      next.rejectedBy = input.by;
      next.error = `not executed: rejected by ${input.by}${input.reason ? `: ${input.reason}` : ''}`;
      break;
    case 'scheduled':
      next.runs = entry.runs + 1;
      next.dispatched = false;
      break;
    case 'not_started':
      next.dispatched = false;
      break;
    case 'dispatched':
      next.dispatched = true;
      next.attempts = Math.max(entry.attempts, input.attempt);
      break;
    case 'succeeded':
      next.result = input.result;
      delete next.error;
      if (input.attempt) next.attempts = Math.max(entry.attempts, input.attempt);
      break;
    case 'failed':
      next.error = input.error;
      break;
    case 'answered':
      next.result = input.answer;
      next.answeredBy = input.by;
      break;
    case 'unanswered':
      next.error = input.reason;
      break;
    case 'outcome_unknown':
      if (input.attempt) next.attempts = Math.max(entry.attempts, input.attempt);
      break;
    case 'recovery_decided':
      next.recoveryDecision = input.decision;
      next.recoveredBy = input.by;
      if (input.signed) next.signedRecovery = input.signed;
      else delete next.signedRecovery;
      break;
    default:
      break;
  }
  return next;
}

/**
 * Fail-safe `applyLedger` for workflow code, where a throw is a task failure that replays forever.
 * An impossible transition is a bug: it is kept as an `invariant_violated` event, and a call that
 * is not finished parks in recovery_required so a person decides (a finished call stays finished).
 */
export function applyLedgerSafely(
  entry: LedgerEntry,
  input: LedgerInput,
  at: string,
): { entry: LedgerEntry; violation?: string } {
  try {
    return { entry: applyLedger(entry, input, at) };
  } catch (err) {
    if (!(err instanceof LedgerTransitionError)) throw err;
    const violation = `'${input.type}' is not allowed in state '${entry.state}'`;
    const events = [...entry.events, { at, type: 'invariant_violated', attempted: input.type, from: entry.state }];
    if (isTerminal(entry.state)) return { entry: { ...entry, events }, violation };
    const reason = `ledger invariant violated (${violation}); nothing more runs until a person decides`;
    return {
      entry: { ...entry, state: 'recovery_required', events: [...events, { at, type: 'recovery_required', reason }] },
      violation,
    };
  }
}

/** Events that change nothing (TRANSITIONS: 'same', no decision applied): they do not end a fence. */
const REFUSALS: readonly string[] = ['decision_refused'];

/** A decided retry waiting out the last attempt's window, while it waits (the call's last event but refusals). */
export function pendingFence(entry: LedgerEntry): { until: string; attempt: number; by: string } | undefined {
  if (entry.state !== 'recovery_required') return undefined;
  // A decision refused during the wait leaves the turn on the same timer: the fence still stands.
  const last = [...entry.events].reverse().find((ev) => !REFUSALS.includes(ev.type));
  if (last?.type !== 'retry_fenced') return undefined;
  return { until: String(last.until), attempt: Number(last.attempt), by: String(last.by) };
}

/**
 * What a person's retry does about an earlier attempt that may still land, in one line that every
 * view prints (CLI, approvals page, Web UI details), derived from the entry's `hasReconcile`.
 * Undefined for a read, or an entry recorded before the field was kept.
 */
export function reconcileNote(entry: LedgerEntry): string | undefined {
  if (entry.effect !== 'external' || entry.hasReconcile === undefined) return undefined;
  return entry.hasReconcile
    ? `a retry first asks ${entry.tool}'s reconcile() whether an earlier attempt was applied: applied → succeeded with its result, not applied → runs again, cannot tell → parks again`
    : `${entry.tool} has no reconcile(): an earlier attempt may still land after its window (a relay, a queue or a mail server can apply it late), and the wait before a retry runs proves nothing about the external system: check there first`;
}

/** reconcileNote for a call parked in recovery_required, where a person is about to decide. */
export const retryNote = (entry: LedgerEntry): string | undefined =>
  entry.state === 'recovery_required' ? reconcileNote(entry) : undefined;

/** The invariant violations a ledger recorded; tests assert there are none. */
export const invariantViolations = (entries: readonly LedgerEntry[]): string[] =>
  entries.flatMap((e) =>
    e.events
      .filter((ev) => ev.type === 'invariant_violated')
      .map((ev) => `${e.toolCallId}: '${String(ev.attempted)}' in state '${String(ev.from)}'`),
  );

export const isTerminal = (state: CallState): boolean => TERMINAL_CALL_STATES.includes(state);

/** The turn's OpenWorkerState while it runs: a parked call outranks a waiting one. */
export function liveTurnState(entries: readonly LedgerEntry[]): TurnState {
  if (entries.some((e) => e.state === 'recovery_required')) return 'recovery_required';
  if (entries.some((e) => e.state === 'awaiting_approval')) return 'awaiting_approval';
  if (entries.some((e) => e.state === 'awaiting_answer')) return 'awaiting_answer';
  return 'running';
}

/**
 * The time (ms) after which the latest dispatched attempt can no longer be running: its dispatch
 * plus its start-to-close window plus a margin. Both times are workflow time (the Temporal
 * server's clock); the attempt counts its window on its own monotonic clock from when it started,
 * which is before the dispatch, and the margin covers the tool answering its abort. 0 when nothing
 * was dispatched.
 */
export function attemptFence(entry: LedgerEntry, startToCloseMs: number, marginMs = 2000): number {
  const dispatched = [...entry.events].reverse().find((e) => e.type === 'dispatched');
  return dispatched ? Date.parse(dispatched.at) + startToCloseMs + marginMs : 0;
}

/**
 * Whether a run of this call before the current one (the last `scheduled`) may have called the
 * adapter: a protected run that recorded its dispatch (unless a `not_started` took it back), or any
 * run of an unprotected external call, which records no dispatch marker. A refusal of the current run
 * (an unregistered tool, arguments its schema no longer accepts) proves nothing about those.
 */
export function earlierRunMayHaveApplied(
  entry: LedgerEntry,
  spec: { effect: ToolEffect; recovery: RecoveryPolicy },
): boolean {
  if (spec.effect !== 'external') return false;
  const marked = spec.recovery !== 'idempotent';
  let earlier = false;
  let run = false;
  for (const ev of entry.events) {
    if (ev.type === 'scheduled') {
      earlier ||= run;
      run = !marked;
    } else if (ev.type === 'dispatched') run = true;
    else if (ev.type === 'not_started') run = false;
    // The previous runtime may have run it (OpenWorker's "approved, no result").
    else if (ev.type === 'imported' && ev.disposition === 'recovery_required') earlier = true;
  }
  return earlier;
}

/** The activity ID of the n-th run of an execution (n ≥ 1); unique among the run's open activities. */
export const activityIdFor = (executionId: string, run: number): string =>
  run <= 1 ? executionId : `${executionId}-${run}`;
