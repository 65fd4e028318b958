// Tools and tool calls: what the model asks for, and what the worker plans from it. Plain data only: everything here crosses Temporal's data converter and lands in history.

/** `read` tools observe; `external` tools change the world (send, charge, merge). */
export type ToolEffect = 'read' | 'external';

/**
 * What the runtime may do when an external tool's outcome is unknown after it was dispatched.
 * - `manual`: never retried blindly; the call parks in `recovery_required` until a human decides.
 * - `idempotent`: retried automatically with the same execution ID (the tool's idempotency key).
 * - `reconcile`: ask the external system (`reconcile()`) whether the execution ID was applied.
 */
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
  /** A read run as a local activity (absent in calls planned before local reads). */
  local?: boolean;
  /** Answered by a person with the `answer` signal (ask_user): no activity runs (workflows/answers.ts). */
  asks?: true;
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
  /**
   * The worker's deployment notifies parks (worker option `notify`, OPENWORKER_NOTIFY=on): each park
   * of this call schedules the notify activity (workflows/notifyParks.ts). Recorded with the model
   * response, so a replay schedules what the live run did whatever the worker's setting is now.
   */
  notify?: true;
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

/** An approver's signature on a decision (workflows/protocol.ts; signedMessage in workflows/signatures.ts). */
export type { DecisionSignature } from '../protocol';

export interface ModelStep {
  text: string;
  /** With a `context` input: the ids are final (unique in the session) and the step's message is stored. */
  calls: PlannedCall[];
  /** The stored context including this step's assistant message (absent for a `messages` input). */
  context?: ContextRef;
}

/**
 * A transcript kept in the payload store by reference: a chain of stored segments, each a few
 * messages and a reference to the segment before it, so each message is stored once however many
 * model calls read it. Plain data; the worker stores and reads it (runtime/contextStore.ts).
 */
export interface ContextRef {
  /** The payload store driver and its claim for the last segment. */
  driver: string;
  claim: Record<string, string>;
  /** How many messages the whole chain holds, from the session's first. */
  messages: number;
  /** What the model sees instead of the chain's first `covers` messages (compaction); the chain keeps them. */
  summary?: ContextSummary;
  /** The model's view is near its budget: the turn compacts before its next model call. */
  compactDue?: boolean;
}

/** A stored summary of a transcript's first `covers` messages. */
export interface ContextSummary {
  driver: string;
  claim: Record<string, string>;
  covers: number;
}
