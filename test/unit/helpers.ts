import { createDecisionIntake } from '../../workflows/intake';
import { applyLedger } from '../../workflows/ledger';
import { CALL_STATES } from '../../workflows/types';
import type {
  CallState,
  DecisionRecord,
  LedgerEntry,
  PlannedCall,
  RecoverSignal,
  ToolSpec,
} from '../../workflows/types';

/** Every call state, in the order the ledger's types declare them. */
export const ALL_STATES: readonly CallState[] = CALL_STATES;

export const AT = '2024-01-01T00:00:00.000Z';

/** The arguments digest of planned() and entryIn(). */
export const DIGEST = 'sha256:' + 'a'.repeat(64);

/** The ids a decision payload carries in the decision tests. */
export const DECISION_IDS = { toolCallId: 'call_1', by: 'alice' };

export function spec(over: Partial<ToolSpec> = {}): ToolSpec {
  return {
    name: 'send_email',
    effect: 'external',
    requiresApproval: true,
    recovery: 'manual',
    maxAttempts: 5,
    hasReconcile: false,
    startToCloseMs: 120000,
    heartbeatMs: 5000,
    ...over,
  };
}

export function planned(over: Partial<PlannedCall> = {}): PlannedCall {
  return {
    toolCallId: 'call_1',
    name: 'send_email',
    arguments: { to: 'bob@example.com' },
    argsDigest: DIGEST,
    spec: spec(),
    ...over,
  };
}

/** A ledger entry in an arbitrary state (built directly, not through transitions). */
export function entryIn(state: CallState, over: Partial<LedgerEntry> = {}): LedgerEntry {
  return {
    toolCallId: 'call_1',
    executionId: 'owx-0123456789abcdef0123456789abcdef',
    tool: 'send_email',
    argsDigest: DIGEST,
    arguments: { to: 'bob@example.com' },
    effect: 'external',
    recovery: 'manual',
    iteration: 1,
    state,
    attempts: 0,
    runs: 0,
    dispatched: false,
    events: [{ at: AT, type: 'created' }],
    ...over,
  };
}

/** A decision intake over an in-memory ledger, as the turn wires it (every write applied with applyLedger). */
export function intakeOver(
  ledger: Map<string, LedgerEntry>,
  opts: { now?: () => string; cancelled?: () => boolean } = {},
) {
  const now = opts.now ?? (() => AT);
  const decisions: DecisionRecord[] = [];
  const recoveries = new Map<string, RecoverSignal>();
  const intake = createDecisionIntake({
    ledger,
    recoveries,
    decisions,
    record: (id, change) => ledger.set(id, applyLedger(ledger.get(id)!, change, now())),
    publish: () => undefined,
    now,
    ...(opts.cancelled ? { cancelled: opts.cancelled } : {}),
  });
  return { intake, decisions, recoveries };
}
