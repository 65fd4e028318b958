// People's decisions (approve, reject, recover) and the dispatch marker's request. Plain data only: everything here crosses Temporal's data converter and lands in history.

import type { RecoveryDecision } from './ledger';
import type { DecisionSignature } from './tool';

/**
 * Binds a decision to what its sender saw: a decision whose execution ID (or, for recover, run)
 * differs from the call's is ignored, so a stale decision cannot land on another call or failure.
 */
interface DecisionBinding {
  executionId?: string;
  /** Optional client-chosen id, so the sender can find its decision in the ledger. */
  decisionId?: string;
  /** An approver's signature; required for approve and recover when the worker has a policy. */
  signature?: DecisionSignature;
}

export interface ApproveSignal extends DecisionBinding {
  toolCallId: string;
  by: string;
  argsDigest?: string;
}

export interface RejectSignal extends DecisionBinding {
  toolCallId: string;
  by: string;
  reason?: string;
}

export interface RecoverSignal extends DecisionBinding {
  toolCallId: string;
  decision: RecoveryDecision;
  result?: unknown;
  reason?: string;
  by: string;
  /** The run (ledger `runs`) whose unknown outcome this decides. */
  run?: number;
  /** Which time the call parked in recovery_required (1 = the first) the sender saw and answers. */
  park?: number;
  /**
   * retry only: run at once instead of waiting until the last dispatched attempt can no longer be
   * running (its start-to-close window). For an operator who knows that attempt is gone; audited.
   */
  skipFence?: boolean;
}

export type DecisionKind = 'approve' | 'reject' | 'recover';

export type BatchedDecision =
  ({ kind: 'approve' } & ApproveSignal) | ({ kind: 'reject' } & RejectSignal) | ({ kind: 'recover' } & RecoverSignal);

export interface DecisionsSignal {
  decisions: BatchedDecision[];
}

/** Every decision a turn received, applied or not. */
export interface DecisionRecord {
  at: string;
  /** `decisions`: a batch signal that was malformed as a whole. */
  kind: DecisionKind | 'decisions';
  toolCallId?: string;
  by?: string;
  decisionId?: string;
  outcome: 'applied' | 'ignored';
  why?: string;
  /** The key whose valid signature the decision carried. */
  signedBy?: string;
  /** The one record that counts the decisions not applied that the turn did not keep (workflows/audit.ts). */
  omitted?: number;
}

/** Sent by the execute activity before it calls the tool; the turn answers whether it may proceed. */
export interface DispatchRequest {
  executionId: string;
  activityId: string;
  attempt: number;
}

export interface DispatchAnswer {
  proceed: boolean;
  reason?: string;
}

/** A notifier's claim on a parked call's notification (the `notify` update; workflows/notifications.ts). */
export interface NotifyClaim {
  executionId: string;
  /** `approval`, or `recovery-<n>` for the call's n-th park in recovery_required. */
  park: string;
  by: string;
  leaseMs: number;
}

/** A notifier's report that it sent a claimed notification (the `notified` signal). */
export interface NotifiedReport {
  executionId: string;
  park: string;
  by: string;
  delivered: number;
  failed: number;
}
