import type { ReconcileAnswer, RecoveryDecision, RecoveryPolicy, ToolEffect } from './types';

// What to do after each thing that can happen to a tool call. Pure: table-tested in test/policy.test.ts.

export type ExecutionOutcome =
  | { kind: 'succeeded'; result: unknown; attempt?: number }
  /**
   * The tool said so (ToolFailure), or this attempt was refused before the adapter (`refused`: the
   * tool is not registered, the arguments no longer fit its schema, the turn refused the dispatch):
   * this attempt did not apply it, which says nothing about an earlier one.
   */
  | { kind: 'not_applied'; error: string; refused?: RefusedBeforeTool }
  /** The attempt proved it never called the adapter (NotStarted), even if it had been granted dispatch. */
  | { kind: 'not_started'; reason: string }
  /** Timeout, crash, unexpected exception: it may or may not have been applied. */
  | {
      kind: 'unknown';
      reason: string;
      attempt?: number;
      phase?: string;
      /** A timeout's last heartbeat carried the dispatch marker (true) or did not (false). */
      marked?: boolean;
    };

/** Why an attempt was refused before its adapter was called. */
export type RefusedBeforeTool = 'not_registered' | 'invalid_arguments';

export type NextStep =
  | { kind: 'succeed'; result: unknown; via: 'execute' | 'reconcile' | 'recovery'; attempt?: number }
  | { kind: 'fail'; error: string; via: 'execute' | 'recovery' | 'not_dispatched' }
  | { kind: 'run'; why: string }
  /** Ask the external system; `retryDecidedBy`: a person's retry asks first (afterRetryReconcile). */
  | { kind: 'reconcile'; retryDecidedBy?: string }
  | { kind: 'recovery_required'; reason: string };

export interface CallFacts {
  effect: ToolEffect;
  recovery: RecoveryPolicy;
  /** The current run recorded "dispatched" before calling the adapter. */
  dispatched: boolean;
  /** Runs scheduled so far, including the one that just ended. */
  runs: number;
  maxAttempts: number;
  /**
   * An earlier run of this call may have called the adapter (ledger.ts earlierRunMayHaveApplied, or
   * the turn is a rerun): whatever the current run proves, the call may already have applied.
   */
  earlierDispatch?: boolean;
}

/** Protected tools record a dispatch marker and are never retried by Temporal on their own. */
export const isProtected = (effect: ToolEffect, recovery: RecoveryPolicy): boolean =>
  effect === 'external' && recovery !== 'idempotent';

/** Attempts Temporal may make within one run (one scheduled activity). */
export const attemptsPerRun = (effect: ToolEffect, recovery: RecoveryPolicy, maxAttempts: number): number =>
  isProtected(effect, recovery) ? 1 : maxAttempts;

/**
 * Whether an attempt that recorded its marker by heartbeat called the adapter: a result or an error
 * from the adapter says so; a timeout says it through its last heartbeat; a proof of not starting or
 * a refusal says not. Anything else counts as dispatched, the safe side.
 */
export function dispatchLearned(outcome: ExecutionOutcome): boolean {
  if (outcome.kind === 'succeeded') return true;
  if (outcome.kind === 'unknown') return outcome.marked !== false;
  return false;
}

export function afterExecution(facts: CallFacts, outcome: ExecutionOutcome): NextStep {
  if (outcome.kind === 'succeeded')
    return {
      kind: 'succeed',
      result: outcome.result,
      via: 'execute',
      ...(outcome.attempt ? { attempt: outcome.attempt } : {}),
    };
  if (outcome.kind === 'not_applied') {
    if (outcome.refused && facts.earlierDispatch && facts.effect === 'external')
      return { kind: 'recovery_required', reason: refusedAfterDispatch(outcome.error, outcome.refused) };
    return { kind: 'fail', error: outcome.error, via: 'execute' };
  }
  if (facts.effect === 'read') return { kind: 'fail', error: `tool failed: ${outcome.reason}`, via: 'execute' };
  if (facts.recovery === 'idempotent') {
    return { kind: 'recovery_required', reason: `outcome unknown, automatic retries stopped: ${outcome.reason}` };
  }
  if (!facts.dispatched || outcome.kind === 'not_started') {
    // No marker, or the activity itself proved it never called the adapter: running again cannot
    // duplicate anything.
    if (facts.runs < facts.maxAttempts) return { kind: 'run', why: `never dispatched (${outcome.reason})` };
    if (facts.earlierDispatch)
      return {
        kind: 'recovery_required',
        reason: `this retry could not be started after ${facts.runs} runs (${outcome.reason}); an earlier attempt was dispatched and may have applied: decide succeeded or failed, or retry`,
      };
    return {
      kind: 'fail',
      error: `tool could not be started after ${facts.runs} attempts (never dispatched): ${outcome.reason}`,
      via: 'not_dispatched',
    };
  }
  if (facts.recovery === 'reconcile') return { kind: 'reconcile' };
  return { kind: 'recovery_required', reason: `outcome unknown after dispatch: ${outcome.reason}` };
}

const RETRY_NEEDS: Record<RefusedBeforeTool, string> = {
  not_registered: 'a retry needs a worker that has this tool again',
  invalid_arguments: 'a retry needs the tool to accept these arguments again',
};

/** A refusal proves only that this attempt did not run; an earlier dispatched one may have applied. */
const refusedAfterDispatch = (error: string, refused: RefusedBeforeTool): string =>
  `this retry was refused before the tool ran (${error}); an earlier attempt was dispatched and may have applied: decide succeeded or failed (${RETRY_NEEDS[refused]})`;

export function afterReconcile(facts: CallFacts, answer: ReconcileAnswer): NextStep {
  if (answer.status === 'applied') return { kind: 'succeed', result: answer.result, via: 'reconcile' };
  if (answer.status === 'not_applied') {
    if (facts.runs < facts.maxAttempts) return { kind: 'run', why: 'reconcile: not applied' };
    return { kind: 'recovery_required', reason: `reconcile said not applied, but ${facts.runs} runs were used` };
  }
  return { kind: 'recovery_required', reason: `reconcile could not tell: ${answer.reason ?? 'unknown'}` };
}

export function afterRecoveryDecision(decision: {
  decision: RecoveryDecision;
  result?: unknown;
  reason?: string;
  by: string;
}): NextStep {
  switch (decision.decision) {
    case 'retry':
      return { kind: 'run', why: `retry decided by ${decision.by}` };
    case 'succeeded':
      // Without a result from the human, the model still learns what happened and from whom.
      return {
        kind: 'succeed',
        result: decision.result ?? {
          status: 'succeeded',
          note: `marked succeeded by ${decision.by} during recovery${decision.reason ? `: ${decision.reason}` : ''}`,
        },
        via: 'recovery',
      };
    case 'failed':
      return {
        kind: 'fail',
        error: `failed (decided by ${decision.by})${decision.reason ? `: ${decision.reason}` : ''}`,
        via: 'recovery',
      };
  }
}

/**
 * What a person's retry does once no attempt can still be running (or at once, with --now): a tool
 * with reconcile() is asked first, because a relay, a queue or a mail server can apply an attempt
 * after its start-to-close window, and waiting out the window proves nothing about the external
 * system; a tool without one runs again.
 */
export function retryStep(hasReconcile: boolean, by: string): NextStep {
  return hasReconcile ? { kind: 'reconcile', retryDecidedBy: by } : { kind: 'run', why: `retry decided by ${by}` };
}

/** The answer to a person's retry's question: applied is the result, not applied sends, unknown asks the person again. */
export function afterRetryReconcile(answer: ReconcileAnswer, by: string): NextStep {
  if (answer.status === 'applied') return { kind: 'succeed', result: answer.result, via: 'reconcile' };
  if (answer.status === 'not_applied') return { kind: 'run', why: `retry decided by ${by}; reconcile: not applied` };
  return {
    kind: 'recovery_required',
    reason: `the retry decided by ${by} did not run: reconcile could not tell whether an earlier attempt was applied (${answer.reason ?? 'unknown'}); decide again`,
  };
}

/**
 * The next step of a call whose turn is being cancelled: nothing new is started. A call that never
 * reached its tool fails as interrupted; one that may have (a run was dispatched, this one or an
 * earlier one, or an unprotected external run was scheduled) waits for a human in recovery_required,
 * never silently dropped.
 */
export function whenCancelled(facts: CallFacts, next: NextStep): NextStep {
  if (next.kind !== 'run' && next.kind !== 'reconcile') return next;
  // An earlier run (or an earlier runtime, or the run a reset replaced) counts even before this run starts.
  const mayHaveRun =
    facts.effect === 'external' &&
    (facts.earlierDispatch === true ||
      (facts.runs > 0 && (facts.dispatched || !isProtected(facts.effect, facts.recovery))));
  return mayHaveRun
    ? { kind: 'recovery_required', reason: 'the turn was cancelled before this call’s outcome was known' }
    : { kind: 'fail', error: 'interrupted: the turn was cancelled before this call ran', via: 'not_dispatched' };
}
