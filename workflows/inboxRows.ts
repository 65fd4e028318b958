import type { Question } from './answers';
import { questionOf } from './answers';
import { notAppliedDecisions } from './details';
import { pendingFence, retryNote } from './ledger';
import { parkKeyOf } from './notifications';
import type { DecisionRecord, LedgerEntry } from './types';

// The inbox's rows, kept by the turn in its memo (INBOX_MEMO in definitions.ts) so that listing the
// inbox reads visibility alone and sends no query to a turn. A pure function of the ledger and the
// decisions: the turn upserts the memo when the rows change while it is parked (turnLedger.ts).

/** The states a call waits for a person in: the inbox lists them. */
export const PARKED_STATES = ['awaiting_approval', 'recovery_required', 'awaiting_answer'] as const;
export type ParkedState = (typeof PARKED_STATES)[number];
export const isParked = (s: string): s is ParkedState => (PARKED_STATES as readonly string[]).includes(s);

/** A decision the turn received and did not apply (a signal cannot answer its sender), with why. */
export type NotApplied = Pick<DecisionRecord, 'at' | 'kind' | 'toolCallId' | 'by' | 'why'>;

/** The turn's latest decisions that were not applied (workflows/details.ts), as `show` and the inbox list them. */
export const notApplied = (decisions: readonly DecisionRecord[], toolCallId?: string): NotApplied[] =>
  notAppliedDecisions(decisions, toolCallId).map(({ at, kind, toolCallId: id, by, why }) => ({
    at,
    kind,
    ...(id ? { toolCallId: id } : {}),
    ...(by ? { by } : {}),
    ...(why ? { why } : {}),
  }));

/** Whether the row's park (workflows/notifications.ts parkKeyOf) was notified. */
export interface RowNotification {
  park?: string;
  notified: boolean;
}

/** One parked call as the inbox lists it: no arguments (the call's page shows them), a short preview. */
export interface InboxRow {
  toolCallId: string;
  executionId: string;
  tool: string;
  target?: string;
  state: ParkedState;
  since: string;
  argsDigest: string;
  /** The arguments' first keys, each value clipped (ARGS_PREVIEW_KEYS, ARGS_PREVIEW_CHARS). */
  argsPreview: Record<string, string>;
  attempts: number;
  reason?: string;
  question?: Question;
  fence?: { until: string; attempt: number; by: string };
  retryNote?: string;
  notApplied?: NotApplied[];
  notification: RowNotification;
}

/** The memo's value: which turn, and its parked calls. */
export interface InboxMemo {
  v: 1;
  sessionId: string;
  turn: number;
  rows: InboxRow[];
}

export const ARGS_PREVIEW_KEYS = 6;
export const ARGS_PREVIEW_CHARS = 100;

/** The arguments as the inbox list shows them: a few keys, each value one clipped line. */
export function argsPreview(args: unknown): Record<string, string> {
  const clip = (v: unknown): string => {
    const text = typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v));
    return text.length > ARGS_PREVIEW_CHARS ? `${text.slice(0, ARGS_PREVIEW_CHARS)}… (${text.length} chars)` : text;
  };
  const fields = args && typeof args === 'object' && !Array.isArray(args) ? Object.entries(args) : [['value', args]];
  const shown = Object.fromEntries(fields.slice(0, ARGS_PREVIEW_KEYS).map(([k, v]) => [k, clip(v)]));
  const more = fields.length - ARGS_PREVIEW_KEYS;
  return more > 0 ? { ...shown, '…': `${more} more` } : shown;
}

export function rowNotification(e: LedgerEntry): RowNotification {
  const park = parkKeyOf(e);
  return {
    ...(park ? { park } : {}),
    notified: e.events.some((ev) => ev.park === park && ev.type === 'notified'),
  };
}

/** One parked entry's row. */
export function inboxRowOf(e: LedgerEntry & { state: ParkedState }, decisions: readonly DecisionRecord[]): InboxRow {
  // The park's reason, also while a decided retry waits (its retry_fenced event comes last).
  const parked = [...e.events].reverse().find((ev) => ev.type === 'recovery_required');
  const fence = pendingFence(e);
  const note = retryNote(e);
  const ignored = notApplied(decisions, e.toolCallId);
  return {
    toolCallId: e.toolCallId,
    executionId: e.executionId,
    tool: e.tool,
    ...(e.target ? { target: e.target } : {}),
    state: e.state,
    since: e.events.at(-1)?.at ?? '',
    argsDigest: e.argsDigest,
    argsPreview: argsPreview(e.arguments),
    attempts: e.attempts,
    ...(e.state === 'recovery_required' && typeof parked?.reason === 'string' ? { reason: parked.reason } : {}),
    ...(e.state === 'awaiting_answer' ? { question: questionOf(e.arguments) } : {}),
    ...(fence ? { fence } : {}),
    ...(note ? { retryNote: note } : {}),
    ...(ignored.length ? { notApplied: ignored } : {}),
    notification: rowNotification(e),
  };
}

/** Every parked call of a ledger, in ledger order. */
export function inboxRows(entries: readonly LedgerEntry[], decisions: readonly DecisionRecord[]): InboxRow[] {
  return entries.flatMap((e) => {
    const state = e.state;
    return isParked(state) ? [inboxRowOf({ ...e, state }, decisions)] : [];
  });
}

/** A memo value read back from visibility, or undefined when it is not one (an older turn has none). */
export function readInboxMemo(value: unknown): InboxMemo | undefined {
  const m = value as Partial<InboxMemo> | undefined;
  if (!m || m.v !== 1 || typeof m.sessionId !== 'string' || typeof m.turn !== 'number' || !Array.isArray(m.rows))
    return undefined;
  return m as InboxMemo;
}

/** The fields of a row that hold a workflow-clock time: the memo's key leaves them out. */
const CLOCK_FIELDS = new Set(['since', 'until', 'at']);

/**
 * What decides whether a park upserts its memo again: the rows without their times. A ledger time is
 * the workflow clock of the task that wrote it, and a worker that takes a turn after a workflow task
 * timed out (a worker that died mid-task) has been seen to write another time than a replay of the
 * same task: an upsert decided on a time alone would make the replay issue a command the history
 * lacks (a nondeterminism error). A change of time alone leaves the memo's time stale, never wrong
 * elsewhere.
 */
export const memoKey = (memo: InboxMemo): string =>
  JSON.stringify(memo, (key, value: unknown) => (CLOCK_FIELDS.has(key) ? undefined : value));
