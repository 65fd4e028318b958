// The ledger: one entry per tool call, its states and events. Plain data only: everything here crosses Temporal's data converter and lands in history.

import type { RecoveryDecision } from '../protocol';
import type { ApprovalRequirement, RecoveryPolicy, ToolEffect } from './tool';

/** The decisions a person can take on a call in recovery_required (workflows/protocol.ts). */
export type { RecoveryDecision } from '../protocol';

/**
 * The ledger: one entry per tool call. States follow the seed's protocol:
 * awaiting_approval → running → dispatched → succeeded | failed | recovery_required (→ running …),
 * with reconciling between an unknown outcome and the reconcile answer.
 */
export const CALL_STATES = [
  'invalid',
  'awaiting_approval',
  'rejected',
  'running',
  'dispatched',
  'reconciling',
  'succeeded',
  'failed',
  'recovery_required',
  /** The ask_user built-in: the call waits for a person's `answer` (workflows/answers.ts); no activity runs. */
  'awaiting_answer',
] as const;
export type CallState = (typeof CALL_STATES)[number];

export const TERMINAL_CALL_STATES: readonly CallState[] = ['invalid', 'rejected', 'succeeded', 'failed'];

export interface LedgerEvent {
  at: string;
  type: string;
  [detail: string]: unknown;
}

export interface LedgerEntry {
  toolCallId: string;
  executionId: string;
  tool: string;
  target?: string;
  argsDigest: string;
  arguments: unknown;
  /** Approved with edits (the `edited` event): what the model asked, and its digest; `arguments` is what runs. */
  originalArguments?: unknown;
  originalDigest?: string;
  editedBy?: string;
  effect?: ToolEffect;
  recovery?: RecoveryPolicy;
  /**
   * The tool has reconcile() (ToolSpec.hasReconcile): a person's retry asks it before running again.
   * Absent in entries recorded before it was kept.
   */
  hasReconcile?: boolean;
  iteration: number;
  state: CallState;
  /** Executions of the tool adapter that may have happened (dispatches), across all runs. */
  attempts: number;
  /** Activities scheduled for this call; the n-th has activity ID `executionId` (n=1) or `executionId-n`. */
  runs: number;
  dispatched: boolean;
  /** The name shown as who approved: a person's, the grant's grantor, `auto` (no approval needed) or the import's. */
  approvedBy?: string;
  /** Who approved, by kind: what every check asks (workflows/deciders.ts), never the name. */
  approver?: Approver;
  /** The standing approval that approved this call, when one did. */
  grantId?: string;
  /** Who may approve, when the worker has approver keys. */
  approval?: ApprovalRequirement;
  /** The verified signature on the approval (or on the last recovery decision). */
  signedApproval?: { keyId: string; signedAt: string };
  signedRecovery?: { keyId: string; signedAt: string };
  rejectedBy?: string;
  recoveryDecision?: RecoveryDecision;
  recoveredBy?: string;
  /** ask_user: who answered the question (the answer is the result). */
  answeredBy?: string;
  result?: unknown;
  error?: string;
  events: LedgerEvent[];
}

export type TurnState =
  'running' | 'awaiting_approval' | 'recovery_required' | 'awaiting_answer' | 'completed' | 'failed' | 'cancelled';

/**
 * Who approved a call: a person (a signal), or automatically, with why: the tool's policy needs no
 * approval, a standing grant covered it, or the previous runtime approved it before an import.
 */
export type Approver = { kind: 'person'; name: string } | { kind: 'auto'; why: 'policy' | 'grant' | 'import' };
