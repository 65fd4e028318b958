// The inputs and results of the turn's activities. Plain data only: everything here crosses Temporal's data converter and lands in history.

import type { ContextRef, Message, ModelStep, PlannedCall, ToolCall } from './tool';

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
  /**
   * Protected tools record "dispatched" before the adapter is called, as an awaited heartbeat the
   * server keeps with the attempt: a cancel request before it means "not started", after it the tool
   * finishes.
   */
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
  /** The dispatch marker: every heartbeat from the marker on carries it, so none can erase it. */
  dispatched?: true;
}

/** Input of the activity that looks up imported tool calls in the worker's registry. */
export interface PlanCallsInput {
  calls: ToolCall[];
}

export interface ModelActivityInput {
  sessionId: string;
  turn: number;
  iteration: number;
  /**
   * The transcript by reference: what is stored already, then the messages since. `anew`: the base
   * was stored by an earlier run of the session; store the whole transcript again as one segment.
   */
  context: { base?: ContextRef; append: Message[]; anew?: boolean };
}

/** Asks the model to summarise the stored transcript's older messages (compaction). */
export interface CompactInput {
  sessionId: string;
  turn: number;
  iteration: number;
  context: ContextRef;
}

/** A tool's `reconcile()` answer: was this execution ID applied by the external system? */
export type ReconcileAnswer<R = unknown> =
  { status: 'applied'; result: R } | { status: 'not_applied' } | { status: 'unknown'; reason?: string };

/** The activities a turn schedules; implemented by `activities/` and registered by the worker. */
export interface TurnActivities {
  callModel(input: ModelActivityInput): Promise<ModelStep>;
  /** Summarises the older messages of the stored transcript; the same reference with a new summary. */
  compactContext(input: CompactInput): Promise<ContextRef>;
  planToolCalls(input: PlanCallsInput): Promise<PlannedCall[]>;
  executeTool(input: ToolActivityInput): Promise<ToolActivityResult>;
  reconcileTool(input: ToolActivityInput): Promise<ReconcileAnswer>;
  /** The names of the tools this worker serves now (workflows/tools.ts). */
  listTools(): Promise<string[]>;
}

/**
 * What a notification about one park says (the notify activity's input): the facts a message needs,
 * never the call's arguments (an ask_user question is its text only).
 */
export interface ParkNotice {
  sessionId: string;
  turn: number;
  toolCallId: string;
  executionId: string;
  tool: string;
  target?: string;
  state: 'awaiting_approval' | 'awaiting_answer' | 'recovery_required';
  /** recovery_required: why the call parked. */
  reason?: string;
  /** awaiting_answer: the question asked. */
  question?: string;
  argsDigest: string;
  /** When the call reached this park. */
  since: string;
  /** `approval`, `question` or `recovery-<n>` (workflows/notifications.ts parkKeyOf). */
  park: string;
}

/** What a notifier reports: who sent, to how many of its URLs, and how many it gave up on. */
export interface NotifyParkResult {
  by: string;
  delivered: number;
  failed: number;
}

/** The notify activity's heartbeat details: the URLs (as digests, never the URL) already delivered. */
export interface NotifyHeartbeat {
  delivered: string[];
}

/** The activity the notifiers register (apps/approvals/notifier.ts), on the notify task queue. */
export interface NotifyActivities {
  notifyPark(notice: ParkNotice): Promise<NotifyParkResult>;
}
