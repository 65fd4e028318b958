import type { LedgerEntry } from './types';

// What a ledger write means to an operator: a call started or stopped waiting for a person, or an
// outcome became unknown. Pure, so the table in test/unit/telemetry.test.ts covers it; the turn's
// metrics and wait spans (callTelemetry.ts) are a thin shell over it.

/** The waits a person ends: an approval, or a recovery decision. */
export type CallWait = 'approval' | 'recovery';

export type CallTransition =
  | { kind: 'parked'; wait: CallWait; tool: string }
  /** `outcome`: the state the call left the wait for (running, rejected, failed, …). */
  | { kind: 'resumed'; wait: CallWait; tool: string; outcome: string }
  | { kind: 'unknown_outcome'; tool: string };

const WAITS: Record<string, CallWait> = { awaiting_approval: 'approval', recovery_required: 'recovery' };

const unknowns = (e: LedgerEntry | undefined): number =>
  e?.events.filter((ev) => ev.type === 'outcome_unknown').length ?? 0;

/** The transitions from `before` (absent: a new entry) to `after`, in the order they happened. */
export function callTransitions(before: LedgerEntry | undefined, after: LedgerEntry): CallTransition[] {
  const out: CallTransition[] = [];
  const tool = after.tool;
  for (let n = unknowns(before); n < unknowns(after); n++) out.push({ kind: 'unknown_outcome', tool });
  const was = before ? WAITS[before.state] : undefined;
  const is = WAITS[after.state];
  if (was === is) return out;
  if (was) out.push({ kind: 'resumed', wait: was, tool, outcome: after.state });
  if (is) out.push({ kind: 'parked', wait: is, tool });
  return out;
}

/** Metric names (docs/observability.md); labels are tool, wait and outcome, never arguments or IDs. */
export const METRICS = {
  parked: 'openworker_calls_parked',
  resumed: 'openworker_calls_resumed',
  waitMs: 'openworker_call_wait_ms',
  unknownOutcomes: 'openworker_unknown_outcomes',
} as const;

/** Span names of the waits (the SDK's spans are `Kind:name` too). */
export const WAIT_SPANS: Record<CallWait, string> = { approval: 'ApprovalWait', recovery: 'RecoveryWait' };

/** Buckets of METRICS.waitMs: 1 s to 1 week. */
export const WAIT_HISTOGRAM_BUCKETS_MS = [
  1_000, 10_000, 60_000, 300_000, 900_000, 3_600_000, 14_400_000, 86_400_000, 604_800_000,
] as const;
