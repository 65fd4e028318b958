import type { Question } from '../workflows/answers';
import { questionOf } from '../workflows/answers';
import { notAppliedDecisions } from '../workflows/details';
import type { ClientLike } from './own';
import { asOpenWorker } from './own';
import { pendingFence, retryNote } from '../workflows/ledger';
import { notificationState, type NotificationState } from '../workflows/notifications';
import type { DecisionRecord, ImportInfo, LedgerEntry, Message, RefusedMessage, TurnState } from '../workflows/types';
import { OpenWorkerError, queryWithDeadline, sessionStatus, turnStatus } from './session';

/** A decision the turn received and did not apply (a signal cannot answer its sender), with why. */
export type NotApplied = Pick<DecisionRecord, 'at' | 'kind' | 'toolCallId' | 'by' | 'why'>;

const INBOX_CONCURRENCY = 8;

/** The turn's latest decisions that were not applied (workflows/details.ts), as `show` and the inbox list them. */
export const notApplied = (decisions: readonly DecisionRecord[], toolCallId?: string): NotApplied[] =>
  notAppliedDecisions(decisions, toolCallId).map(({ at, kind, toolCallId: id, by, why }) => ({
    at,
    kind,
    ...(id ? { toolCallId: id } : {}),
    ...(by ? { by } : {}),
    ...(why ? { why } : {}),
  }));

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

export interface InboxItem {
  sessionId: string;
  turn: number;
  workflowId: string;
  toolCallId: string;
  executionId: string;
  tool: string;
  target?: string;
  state: ParkedState;
  since: string;
  /** ask_user: the question waiting for an answer (answer it with `answer`). */
  question?: Question;
  argsDigest: string;
  arguments: unknown;
  attempts: number;
  reason?: string;
  /** A decided retry waiting out the last attempt's window (the call stays here until it runs). */
  fence?: { until: string; attempt: number; by: string };
  /** What a retry does about an earlier attempt that may still land (asks reconcile(), or nothing can). */
  retryNote?: string;
  /** Decisions on this call the turn did not apply, with why. */
  notApplied?: NotApplied[];
  /** Whether this park's notification was sent (or is claimed by a notifier). */
  notification: NotificationState;
}

export interface InboxFilter {
  /** How long one turn may take to answer (default: the CLI's query timeout); a notifier asks again soon. */
  deadlineMs?: number;
  sessionId?: string;
  tool?: string;
  state?: ParkedState;
}

/** The states a call waits for a person in: the inbox lists them. */
export const PARKED_STATES = ['awaiting_approval', 'recovery_required', 'awaiting_answer'] as const;
export type ParkedState = (typeof PARKED_STATES)[number];
const isParked = (s: string): s is ParkedState => (PARKED_STATES as readonly string[]).includes(s);

/** One waiting call as the inbox lists it. */
export function inboxItemOf(
  s: { sessionId: string; turn: number; decisions?: readonly DecisionRecord[] },
  workflowId: string,
  e: LedgerEntry & { state: InboxItem['state'] },
): InboxItem {
  const last = e.events[e.events.length - 1];
  // The park's reason, also while a decided retry waits (its retry_fenced event comes last).
  const parked = [...e.events].reverse().find((ev) => ev.type === 'recovery_required');
  const fence = pendingFence(e);
  const note = retryNote(e);
  const ignored = notApplied(s.decisions ?? [], e.toolCallId);
  return {
    sessionId: s.sessionId,
    turn: s.turn,
    workflowId,
    toolCallId: e.toolCallId,
    executionId: e.executionId,
    tool: e.tool,
    ...(e.target ? { target: e.target } : {}),
    state: e.state,
    since: last?.at ?? '',
    argsDigest: e.argsDigest,
    arguments: e.arguments,
    attempts: e.attempts,
    ...(e.state === 'recovery_required' && typeof parked?.reason === 'string' ? { reason: parked.reason } : {}),
    ...(e.state === 'awaiting_answer' ? { question: questionOf(e.arguments) } : {}),
    ...(fence ? { fence } : {}),
    ...(note ? { retryNote: note } : {}),
    ...(ignored.length ? { notApplied: ignored } : {}),
    // This host's clock against the turn's `until`: advisory, it only decides when a notifier asks
    // again; the turn grants and refuses claims on its own (the server's) clock.
    notification: notificationState(e, Date.now()),
  };
}

/** Every call waiting for approval or in recovery_required, across sessions, newest first. */
export async function inbox(client: ClientLike, filter: InboxFilter = {}): Promise<InboxItem[]> {
  const c = asOpenWorker(client);
  const parked = PARKED_STATES.map((st) => `"${st}"`).join(', ');
  const clauses = ['ExecutionStatus = "Running"', `OpenWorkerState IN (${parked})`];
  if (filter.sessionId) clauses.push(`OpenWorkerSession = ${JSON.stringify(filter.sessionId)}`);
  const items: InboxItem[] = [];
  const unreadable: { workflowId: string; why: string }[] = [];
  const waiting: { workflowId: string; runId: string; taskQueue: string }[] = [];
  for await (const wf of c.client.workflow.list({ query: clauses.join(' AND ') })) waiting.push(wf);
  // Turns answer in parallel, each asked on its own task queue: a turn whose workers are gone is
  // given up on quickly and delays no other.
  const read = async (wf: (typeof waiting)[number]) => {
    const handle = c.client.workflow.getHandle(wf.workflowId, wf.runId);
    const own = wf.taskQueue && wf.taskQueue !== c.taskQueue ? { ...c, taskQueue: wf.taskQueue } : c;
    const status = await queryWithDeadline(
      own,
      `turn ${wf.workflowId}`,
      () => handle.query('status'),
      filter.deadlineMs,
    ).catch((err: Error) => {
      unreadable.push({ workflowId: wf.workflowId, why: err.message.split('\n')[0]! });
      return undefined;
    });
    if (!status) return;
    const s = status as Awaited<ReturnType<typeof turnStatus>>;
    for (const e of s.ledger) {
      const state = e.state;
      if (!isParked(state)) continue;
      if (filter.tool && e.tool !== filter.tool) continue;
      if (filter.state && state !== filter.state) continue;
      items.push(inboxItemOf(s, wf.workflowId, { ...e, state }));
    }
  };
  for (let i = 0; i < waiting.length; i += INBOX_CONCURRENCY)
    await Promise.all(waiting.slice(i, i + INBOX_CONCURRENCY).map(read));
  // "Inbox is empty" would be a lie when the waiting turns could not be read (a missing key, say).
  if (!items.length && unreadable.length) {
    throw new OpenWorkerError(
      `${unreadable.length} waiting turn(s) could not be read, e.g. ${unreadable[0]!.workflowId}: ${unreadable[0]!.why}`,
      'not_found',
    );
  }
  return items.sort((a, b) => b.since.localeCompare(a.since));
}
