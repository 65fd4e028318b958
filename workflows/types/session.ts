// Turns and sessions: their inputs, status and results, grants and imports. Plain data only: everything here crosses Temporal's data converter and lands in history.

import type { Grant } from '../protocol';
import type { DecisionRecord } from './decisions';

// The signal payloads (and Grant, which the `grants` signal carries) are zod schemas in workflows/protocol.ts.
export type { Grant, GrantSignal, RevokeSignal, SessionMessageSignal } from '../protocol';
import type { LedgerEntry, TurnState } from './ledger';
import type { ContextRef, Message, ToolCall } from './tool';

/** The limits a user sets for a turn (ranges: workflows/turnOptions.ts). */
export interface TurnOptions {
  /** Model calls the turn may make; the last one's tool calls are not executed (default 40, 1 to 200). */
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

export interface TurnInput {
  sessionId: string;
  turn: number;
  /** The transcript before this turn; with `context`, only the messages the reference does not hold yet. */
  history: Message[];
  /** The transcript's first messages, by reference (`history` follows them). */
  context?: ContextRef;
  /** The context was stored by an earlier run of the session: the first model call stores it again, whole. */
  storeContextAnew?: boolean;
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
  /** The stored transcript after its last model call: the history and the first messages of `messages`. */
  context?: ContextRef;
  /** The messageIds of the steering messages its model calls saw (workflows/steering.ts), in order. */
  steered?: string[];
}

export interface QueuedMessage {
  text: string;
  messageId: string;
  /** This turn's limits, over the session's `options`. */
  options?: TurnOptions;
  /** Sent with `queue: true`: waits for a turn of its own, never steers the running turn. */
  queue?: boolean;
  /** Given to this running turn: its next model call takes it; if the turn ends first, it runs as a turn of its own. */
  steering?: number;
}

/** A `message` signal the session refused (too large, empty, malformed): nothing was queued. */
export interface RefusedMessage {
  at: string;
  messageId?: string;
  reason: string;
}

/** The `messageTurn` query's answer: one message's turn, its refusal, or that it is still queued. */
export interface MessageTurn {
  /** The turn it started, or the one that took it as a steering message (its `steered` says so). */
  turn?: TurnSummary;
  refused?: RefusedMessage;
  queued: boolean;
  /** Queued, and given to this running turn: its next model call takes it, else it runs as a turn of its own. */
  steering?: number;
}

export interface TurnSummary {
  n: number;
  workflowId: string;
  messageId: string;
  state: TurnState;
  error?: string;
  /** Messages sent while it ran that its model calls saw (their messageIds): they start no turn of their own. */
  steered?: string[];
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
  /** The transcript's first messages, stored by reference; `transcript` holds the rest. */
  context?: ContextRef;
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
  /** The messages `context` does not hold (all of them without it). */
  transcript: Message[];
  /**
   * In the `session` query's answer, the transcript's first messages by reference (read them from the
   * payload store); the library's `sessionStatus` reads them into `transcript` and leaves this out.
   */
  context?: ContextRef;
  turns: TurnSummary[];
  pending: QueuedMessage[];
  activeTurn?: number;
  /** The latest message signals that were refused, with why (at most 20). */
  refused?: RefusedMessage[];
}
