import type { CallState, LedgerEntry, PlannedCall, ToolSpec } from '../../workflows/types';

export const ALL_STATES: readonly CallState[] = [
  'invalid',
  'awaiting_approval',
  'rejected',
  'running',
  'dispatched',
  'reconciling',
  'succeeded',
  'failed',
  'recovery_required',
];

export const AT = '2024-01-01T00:00:00.000Z';

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
    argsDigest: 'sha256:' + 'a'.repeat(64),
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
    argsDigest: 'sha256:' + 'a'.repeat(64),
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
