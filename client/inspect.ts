import {
  type InboxMemo,
  type InboxRow,
  notApplied,
  type NotApplied,
  PARKED_STATES,
  type ParkedState,
} from '../workflows/inboxRows';
import type { ClientLike } from './own';
import { type ListedTurn, parkedTurns, type UnreadableTurn } from './parkedTurns';
import { asOpenWorker } from './own';
import type { ImportInfo, LedgerEntry, Message, RefusedMessage, TurnState } from '../workflows/types';
import { OpenWorkerError, sessionStatus, turnStatus } from './session';

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

/** One waiting call as the inbox lists it: its memo row (workflows/inboxRows.ts) and where it lives. */
export interface InboxItem extends InboxRow {
  sessionId: string;
  turn: number;
  workflowId: string;
}

export interface InboxFilter {
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

/** One waiting call as the inbox lists it, from its turn's memo row. */
export function inboxItemOf(s: { sessionId: string; turn: number }, workflowId: string, row: InboxRow): InboxItem {
  return { sessionId: s.sessionId, turn: s.turn, workflowId, ...row };
}

/**
 * Every call waiting for approval, an answer or in recovery_required, across sessions, newest first:
 * one visibility list, each turn's rows from its memo, no query to a turn (docs/approvals.md). A turn
 * that cannot be read (a memo sealed under a key this client lacks, its object gone from the payload
 * store, no memo at all) is named in `unreadable` and hides no other turn's calls.
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
  const { rows, unreadable } = await parkedTurns(c, clauses.join(' AND '), filter.limit);
  for (const r of rows) add(r.turn, r.memo);
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
