import {
  type InboxMemo,
  type InboxRow,
  inboxRows,
  notApplied,
  type NotApplied,
  PARKED_STATES,
  type ParkedState,
  type RowNotification,
} from '../workflows/inboxRows';
import type { OpenWorkerClient } from './connection';
import type { ClientLike } from './own';
import { type ListedTurn, parkedTurns, type UnreadableTurn, unreadableTurn } from './parkedTurns';
import { asOpenWorker } from './own';
import type { NotificationState } from '../workflows/notifications';
import type { ImportInfo, LedgerEntry, Message, RefusedMessage, TurnState } from '../workflows/types';
import { OpenWorkerError, queryWithDeadline, sessionStatus, turnStatus } from './session';

const INBOX_CONCURRENCY = 8;

export { notApplied, type NotApplied };

export interface ExecutionView extends LedgerEntry {
  turnWorkflowId: string;
  turn: number;
}

export interface SessionView {
  sessionId: string;
  /** Set when the session was imported from another runtime: its protocol marker. */
  imported?: ImportInfo;
  turns: {
    n: number;
    workflowId: string;
    state: TurnState;
    error?: string;
    notApplied?: NotApplied[];
    /** The messages sent while it ran that its model calls took (their messageIds). */
    steered?: string[];
  }[];
  executions: ExecutionView[];
  transcript: Message[];
  /** `steering`: the running turn the message was given to (workflows/steering.ts). */
  pending: { text: string; messageId: string; steering?: number }[];
  /** Message signals the session refused, with why. */
  refused?: RefusedMessage[];
}

/** The transcript, every turn with its state, and every tool call's ledger entry. */
export async function showSession(client: ClientLike, sessionId: string): Promise<SessionView> {
  const c = asOpenWorker(client);
  const s = await sessionStatus(c, sessionId);
  const turns: SessionView['turns'] = [];
  const executions: ExecutionView[] = [];
  for (const t of s.turns) {
    let state = t.state;
    let error = t.error;
    let ignored: NotApplied[] = [];
    try {
      const live = await turnStatus(c, t.workflowId);
      state = live.state;
      error = live.error;
      ignored = notApplied(live.decisions);
      executions.push(...live.ledger.map((e) => ({ ...e, turnWorkflowId: t.workflowId, turn: t.n })));
    } catch {
      // a turn whose history is gone (retention) still shows what the session remembers
    }
    turns.push({
      n: t.n,
      workflowId: t.workflowId,
      state,
      ...(error ? { error } : {}),
      ...(ignored.length ? { notApplied: ignored } : {}),
      ...(t.steered?.length ? { steered: t.steered } : {}),
    });
  }
  return {
    sessionId: s.sessionId,
    ...(s.imported ? { imported: s.imported } : {}),
    turns,
    executions,
    transcript: s.transcript,
    pending: s.pending,
    ...(s.refused?.length ? { refused: s.refused } : {}),
  };
}

/** One waiting call as the inbox lists it: its memo row (workflows/inboxRows.ts), where it lives, and the notification read on this host's clock. */
export interface InboxItem extends Omit<InboxRow, 'notification'> {
  sessionId: string;
  turn: number;
  workflowId: string;
  /** Whether this park's notification was sent (or is claimed by a notifier). */
  notification: NotificationState;
}

export interface InboxFilter {
  /** How long a turn without a memo (started before inbox-memo-v1) may take to answer its query (default: the CLI's query timeout). */
  deadlineMs?: number;
  sessionId?: string;
  tool?: string;
  state?: ParkedState;
  /**
   * Read at most about this many waiting turns, the most recently started first (visibility's order):
   * a listing's time grows with the turns it reads (docs/performance.md, the inbox with 10,000).
   */
  limit?: number;
}

export { PARKED_STATES, type ParkedState, type UnreadableTurn };

/** The inbox: every call it could read, and every waiting turn it could not (whose calls are not in `calls`). */
export interface InboxListing {
  calls: InboxItem[];
  unreadable: UnreadableTurn[];
}

/** A legacy notifier's claim (turns from before notify-activity-v1) is live by this host's clock: advisory, shown only. */
function notificationOf(n: RowNotification, nowMs: number): NotificationState {
  const live = n.claimedUntil && Date.parse(n.claimedUntil) > nowMs;
  return {
    ...(n.park ? { park: n.park } : {}),
    notified: n.notified,
    claims: n.claims,
    ...(live ? { claimedBy: n.claimedBy!, claimedUntil: n.claimedUntil! } : {}),
  };
}

/** One waiting call as the inbox lists it, from its turn's row (memo) or ledger entry (older turns). */
export function inboxItemOf(s: { sessionId: string; turn: number }, workflowId: string, row: InboxRow): InboxItem {
  const { notification, ...rest } = row;
  return {
    sessionId: s.sessionId,
    turn: s.turn,
    workflowId,
    ...rest,
    // This host's clock against the turn's `until`: the turn grants and refuses claims on its own.
    notification: notificationOf(notification, Date.now()),
  };
}

/** A turn started before `inbox-memo-v1` keeps no rows: its ledger is asked, as the inbox did before. */
async function queriedRows(c: OpenWorkerClient, wf: ListedTurn, deadlineMs?: number): Promise<InboxMemo> {
  const handle = c.client.workflow.getHandle(wf.workflowId, wf.runId);
  const own = wf.taskQueue && wf.taskQueue !== c.taskQueue ? { ...c, taskQueue: wf.taskQueue } : c;
  const s = (await queryWithDeadline(
    own,
    `turn ${wf.workflowId}`,
    () => handle.query('status'),
    deadlineMs,
  )) as Awaited<ReturnType<typeof turnStatus>>;
  return { v: 1, sessionId: s.sessionId, turn: s.turn, rows: inboxRows(s.ledger, s.decisions) };
}

/**
 * Every call waiting for approval, an answer or in recovery_required, across sessions, newest first:
 * one visibility list, each turn's rows from its memo, no query to a turn (docs/approvals.md). Only
 * turns started before the memo existed are asked, each once; they drain as they finish. A turn that
 * cannot be read (a memo sealed under a key this client lacks, its object gone from the payload
 * store, an older turn that does not answer) is named in `unreadable` and hides no other turn's calls.
 */
export async function inboxListing(client: ClientLike, filter: InboxFilter = {}): Promise<InboxListing> {
  const c = asOpenWorker(client);
  const parked = PARKED_STATES.map((st) => `"${st}"`).join(', ');
  const clauses = ['ExecutionStatus = "Running"', `OpenWorkerState IN (${parked})`];
  if (filter.sessionId) clauses.push(`OpenWorkerSession = ${JSON.stringify(filter.sessionId)}`);
  const calls: InboxItem[] = [];
  const add = (wf: ListedTurn, memo: InboxMemo): void => {
    for (const row of memo.rows) {
      if (filter.tool && row.tool !== filter.tool) continue;
      if (filter.state && row.state !== filter.state) continue;
      calls.push(inboxItemOf(memo, wf.workflowId, row));
    }
  };
  const { rows, older, unreadable } = await parkedTurns(c, clauses.join(' AND '), filter.limit);
  for (const r of rows) add(r.turn, r.memo);
  // Older turns answer in parallel, each asked on its own task queue: a turn whose workers are gone
  // is given up on quickly and delays no other.
  const read = (wf: ListedTurn) =>
    queriedRows(c, wf, filter.deadlineMs).then(
      (memo) => add(wf, memo),
      (err: Error) => void unreadable.push(unreadableTurn(wf.workflowId, err)),
    );
  for (let i = 0; i < older.length; i += INBOX_CONCURRENCY)
    await Promise.all(older.slice(i, i + INBOX_CONCURRENCY).map(read));
  unreadable.sort((a, b) => a.workflowId.localeCompare(b.workflowId));
  return { calls: calls.sort((a, b) => b.since.localeCompare(a.since)), unreadable };
}

/**
 * The calls of `inboxListing` alone: it refuses rather than answer an empty list when it could read
 * none of the waiting turns, but names no unreadable turn beside readable calls (`inboxListing` does).
 */
export async function inbox(client: ClientLike, filter: InboxFilter = {}): Promise<InboxItem[]> {
  const { calls, unreadable } = await inboxListing(client, filter);
  // "Inbox is empty" would be a lie when the waiting turns could not be read (a missing key, say).
  if (!calls.length && unreadable.length) {
    throw new OpenWorkerError(
      `${unreadable.length} waiting turn(s) could not be read, e.g. ${unreadable[0]!.workflowId}: ${unreadable[0]!.why}`,
      'not_found',
    );
  }
  return calls;
}
