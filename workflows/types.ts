// Types shared by workflows, activities and the client. Plain data only: everything here crosses
// Temporal's data converter and lands in history.

export type ToolEffect = 'read' | 'external';
export type RecoveryPolicy = 'manual' | 'idempotent' | 'reconcile';

/** A tool call as the model emitted it. `id` is the provider's tool call id. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: unknown;
}

export type Message =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string; isError?: boolean };

/** What the workflow needs to know about a tool; read from the worker's registry at model time. */
export interface ToolSpec {
  name: string;
  effect: ToolEffect;
  requiresApproval: boolean;
  recovery: RecoveryPolicy;
  maxAttempts: number;
  hasReconcile: boolean;
  startToCloseMs: number;
  heartbeatMs: number;
}

/** A tool call after the worker looked it up and validated its arguments. */
export interface PlannedCall {
  toolCallId: string;
  name: string;
  arguments: unknown;
  /** `sha256:<hex>` of the canonical JSON of the arguments; approvals may bind to it. */
  argsDigest: string;
  spec?: ToolSpec;
  target?: string;
  /** Why this call cannot run (unknown tool, arguments failing the schema). */
  invalid?: string;
  /** Who may approve it, when the worker has approver keys (see workflows/signatures.ts). */
  approval?: ApprovalRequirement;
}

/** An approver's Ed25519 public key, as the worker was configured with it. */
export interface ApproverKey {
  name: string;
  /** `ed25519:<16 hex>`, from the key itself. */
  keyId: string;
  /** The raw 32-byte key, base64. */
  publicKey: string;
}

/**
 * The approvers the worker attached to a call when it planned it. It is recorded with the model
 * response, so a replay verifies against the same keys whatever the worker's configuration is now.
 */
export interface ApprovalRequirement {
  /** A policy is configured: approve and recover decisions count only when signed by `allowed`. */
  signed: boolean;
  /** Every approver key the worker knows: a signature by any of them is checked. */
  approvers: ApproverKey[];
  /** Names the policy allows to approve this call (every approver when there is no policy). */
  allowed: string[];
  /** The policy rule that matched, for the audit. */
  rule?: string;
  /** A signature older than this when it arrives is expired. */
  maxAgeMs: number;
}

/** An approver's signature on a decision (see signedMessage in workflows/signatures.ts). */
export interface DecisionSignature {
  keyId: string;
  /** ISO time of signing; covered by the signature. */
  signedAt: string;
  /** The Ed25519 signature, base64. */
  value: string;
}

export interface ModelStep {
  text: string;
  calls: PlannedCall[];
}

/**
 * The ledger: one entry per tool call. States follow the seed's protocol:
 * awaiting_approval → running → dispatched → succeeded | failed | recovery_required (→ running …),
 * with reconciling between an unknown outcome and the reconcile answer.
 */
export type CallState =
  | 'invalid'
  | 'awaiting_approval'
  | 'rejected'
  | 'running'
  | 'dispatched'
  | 'reconciling'
  | 'succeeded'
  | 'failed'
  | 'recovery_required';

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
  effect?: ToolEffect;
  recovery?: RecoveryPolicy;
  iteration: number;
  state: CallState;
  /** Executions of the tool adapter that may have happened (dispatches), across all runs. */
  attempts: number;
  /** Activities scheduled for this call; the n-th has activity ID `executionId` (n=1) or `executionId-n`. */
  runs: number;
  dispatched: boolean;
  approvedBy?: string;
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
  result?: unknown;
  error?: string;
  events: LedgerEvent[];
}

export type TurnState = 'running' | 'awaiting_approval' | 'recovery_required' | 'completed' | 'failed' | 'cancelled';

export type RecoveryDecision = 'retry' | 'succeeded' | 'failed';

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

export type BatchedDecision = ({ kind: 'approve' } & ApproveSignal) | ({ kind: 'reject' } & RejectSignal) | ({ kind: 'recover' } & RecoverSignal);

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

export interface TurnOptions {
  maxIterations?: number;
}

/**
 * What an import decided for a tool call that the old runtime left without a result (see
 * client/importPlan.ts): `recovery_required` (it may have run), `awaiting_approval` (it provably
 * never ran), `run` (approved and provably never dispatched) or `rejected`.
 */
export type ImportDisposition = 'recovery_required' | 'awaiting_approval' | 'run' | 'rejected';

export interface ImportedCall {
  call: ToolCall;
  disposition: ImportDisposition;
  why: string;
  /** Who approved (or rejected) it in the old runtime, when the file says so. */
  by?: string;
}

/**
 * A standing approval: later calls of `tool` in the session (to `target` only, when set) are
 * approved by it. Revoked grants stay listed for the audit.
 */
export interface Grant {
  id: string;
  tool: string;
  target?: string;
  by: string;
  at: string;
  revokedAt?: string;
  revokedBy?: string;
}

export interface GrantSignal {
  grantId: string;
  tool: string;
  target?: string;
  by: string;
}

export interface RevokeSignal {
  grantId: string;
  by: string;
}

export interface TurnInput {
  sessionId: string;
  turn: number;
  history: Message[];
  /** The session's active grants when the turn started; later changes arrive as `grants` signals. */
  grants?: Grant[];
  /** The version of `grants`; a `grants` signal with a version at or below it is ignored. */
  grantsVersion?: number;
  /** The user message that starts the turn; absent for a turn that resumes imported calls. */
  message?: string;
  /** Tool calls of the history's last assistant message that have no result yet: resolved first. */
  resume?: ImportedCall[];
  options?: TurnOptions;
}

export interface TurnStatus {
  sessionId: string;
  turn: number;
  state: TurnState;
  iteration: number;
  ledger: LedgerEntry[];
  decisions: DecisionRecord[];
  text?: string;
  error?: string;
}

export interface TurnResult extends TurnStatus {
  /** The user message and everything the turn added, each tool call paired with one result. */
  messages: Message[];
}

export interface QueuedMessage {
  text: string;
  messageId: string;
}

export interface SessionMessageSignal {
  text: string;
  messageId?: string;
}

/** A `message` signal the session refused (too large, empty, malformed): nothing was queued. */
export interface RefusedMessage {
  at: string;
  messageId?: string;
  reason: string;
}

export interface TurnSummary {
  n: number;
  workflowId: string;
  messageId: string;
  state: TurnState;
  error?: string;
}

export interface SessionInput {
  sessionId: string;
  transcript?: Message[];
  turns?: TurnSummary[];
  pending?: QueuedMessage[];
  seenMessageIds?: string[];
  options?: TurnOptions;
  /** Set when the session was imported from another runtime; `resume` runs as its first turn. */
  imported?: ImportInfo & { resume?: ImportedCall[] };
  grants?: Grant[];
  /** Turns per run before continue-as-new (default 100; the server may suggest it earlier). */
  turnsPerRun?: number;
  refused?: RefusedMessage[];
}

/** The protocol marker of an imported session, shown by `show`. */
export interface ImportInfo {
  protocol: string;
  source: string;
  importedAt: string;
  messages: number;
  /** What the import dropped or patched, one line each. */
  notes: string[];
}

export interface SessionStatus {
  sessionId: string;
  imported?: ImportInfo;
  /** Standing approvals, active and revoked. */
  grants?: Grant[];
  transcript: Message[];
  turns: TurnSummary[];
  pending: QueuedMessage[];
  activeTurn?: number;
  /** The latest message signals that were refused, with why (at most 20). */
  refused?: RefusedMessage[];
}

/** Inputs of the execute and reconcile activities. */
export interface ToolActivityInput {
  sessionId: string;
  turn: number;
  toolCallId: string;
  executionId: string;
  tool: string;
  arguments: unknown;
  /** Attempts already used by earlier runs; this run's first attempt is `attemptBase + 1`. */
  attemptBase: number;
  /** Protected tools record "dispatched" in the turn before the adapter is called. */
  protect: boolean;
  /** When the call's first run was scheduled (ms since epoch), for the tool's idempotency window. */
  firstScheduledAt?: number;
}

export interface ToolActivityResult {
  result: unknown;
  attempt: number;
}

/** Heartbeat details: they survive the worker and tell the turn how far a lost attempt got. */
export interface ToolHeartbeat {
  attempt: number;
  phase: 'starting' | 'dispatched' | 'executing';
}

/** Input of the activity that looks up imported tool calls in the worker's registry. */
export interface PlanCallsInput {
  calls: ToolCall[];
}

export interface ModelActivityInput {
  sessionId: string;
  turn: number;
  iteration: number;
  messages: Message[];
}

export type ReconcileActivityResult =
  | { status: 'applied'; result: unknown }
  | { status: 'not_applied' }
  | { status: 'unknown'; reason?: string };

/** The activities a turn schedules; implemented by `activities/` and registered by the worker. */
export interface TurnActivities {
  callModel(input: ModelActivityInput): Promise<ModelStep>;
  planToolCalls(input: PlanCallsInput): Promise<PlannedCall[]>;
  executeTool(input: ToolActivityInput): Promise<ToolActivityResult>;
  reconcileTool(input: ToolActivityInput): Promise<ReconcileActivityResult>;
}
