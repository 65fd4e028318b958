import { turnWorkflowId } from '../../workflows/ids';
import { decisionToSign, resultDigestOf, signedMessage } from '../../workflows/signatures';
import { argsDigest, executionIdFor } from '../../workflows/identity';
import { pendingFence, retryNote } from '../../workflows/ledger';
import type { DecisionSignature, LedgerEntry, Message, RecoveryDecision } from '../../workflows/types';
import type { OpenWorkerClient } from '../../client/connection';
import { approve, recover, reject, type DecisionOutcome } from '../../client/decisions';
import { approveAlways } from '../../client/grants';
import { answer } from '../../client/answers';
import { inboxListing, notApplied, type InboxItem, type NotApplied, type UnreadableTurn } from '../../client/inspect';
import { checkSessionId, checkTurn, OpenWorkerError, turnMessages, turnStatus } from '../../client/session';

// What the approvals app shows and does, on top of the client library: everything is read from
// Temporal on each request and every action is a signal, so replicas share no state.

/** Where a call lives; its execution ID is derived from these, so a reference can be checked. */
export interface CallRef {
  sessionId: string;
  turn: number;
  toolCallId: string;
}

export type Action = 'approve' | 'approve_session' | 'approve_target' | 'reject' | RecoveryDecision | 'retry_now';

export interface WaitingCall extends InboxItem {
  waitedMs: number;
}

export interface CallView {
  executionId: string;
  ref: CallRef;
  workflowId: string;
  turnState: string;
  entry: LedgerEntry;
  /** The call's turn: its request, then its latest messages (empty when no worker answered). */
  transcript: Message[];
  actions: Action[];
  /** Set when this call's decisions count only when signed (the worker's approver policy). */
  needsSignature?: string;
  fence?: { until: string; attempt: number };
  /** A parked call: whether a retry asks reconcile() first, or nothing can tell (ledger retryNote). */
  retryNote?: string;
  /** Decisions on this call the turn did not apply, with why. */
  notApplied: NotApplied[];
}

/** The inbox as the app lists it: waiting calls, and the waiting turns it could not read (a banner). */
export interface WaitingCalls {
  calls: WaitingCall[];
  unreadable: UnreadableTurn[];
}

/** The inbox oldest first: the longest-waiting call is the one to decide next. */
export async function waitingCalls(c: OpenWorkerClient, opts: { now?: number } = {}): Promise<WaitingCalls> {
  const { calls, unreadable } = await inboxListing(c);
  const now = opts.now ?? Date.now();
  return {
    calls: calls
      .map((i) => ({ ...i, waitedMs: i.since ? Math.max(0, now - Date.parse(i.since)) : 0 }))
      .sort((a, b) => a.since.localeCompare(b.since)),
    unreadable,
  };
}

/** The reference behind an execution ID: given (and checked against the ID), or found among waiting calls. */
export async function resolveCall(
  c: OpenWorkerClient,
  executionId: string,
  given: Partial<CallRef> = {},
): Promise<CallRef> {
  if (given.sessionId && given.turn && given.toolCallId) {
    // A link's session and turn build a workflow ID: check them as every other entry point does.
    const ref = {
      sessionId: checkSessionId(given.sessionId),
      turn: checkTurn(given.turn),
      toolCallId: given.toolCallId,
    };
    if (executionIdFor(ref.sessionId, ref.turn, ref.toolCallId) !== executionId)
      throw new OpenWorkerError(
        `session ${ref.sessionId}, turn ${ref.turn}, call ${ref.toolCallId} is not execution ${executionId}`,
        'bad_input',
      );
    return ref;
  }
  // Turns that could not be read hide none of the others' calls; a miss says the call may be in one.
  const { calls, unreadable } = await inboxListing(c);
  const hit = calls.find((i) => i.executionId === executionId);
  if (!hit) {
    const maybe = unreadable.length
      ? ` (or it is in one of the ${unreadable.length} waiting turn(s) that could not be read, e.g. ${unreadable[0]!.workflowId}: ${unreadable[0]!.why})`
      : '';
    throw new OpenWorkerError(
      `execution ${executionId} is not waiting for a decision${maybe}; to open a decided call, add ?session=&turn=&call=`,
      'not_found',
    );
  }
  return { sessionId: hit.sessionId, turn: hit.turn, toolCallId: hit.toolCallId };
}

export function actionsFor(e: LedgerEntry): Action[] {
  if (e.state === 'awaiting_approval')
    return ['approve', 'approve_session', ...(e.target ? (['approve_target'] as const) : []), 'reject'];
  // retry_now: a decided retry that waits out the last attempt's window runs at once (the CLI's --now).
  if (e.state === 'recovery_required')
    return ['retry', ...(pendingFence(e) ? (['retry_now'] as const) : []), 'succeeded', 'failed'];
  return [];
}

/**
 * The call's page: what a decision is checked against, and its own turn's messages (the session's
 * transcript holds a turn only once it finished: a parked turn's request is not there yet).
 */
export async function callView(c: OpenWorkerClient, ref: CallRef): Promise<CallView> {
  const [view, transcript] = await Promise.all([
    turnView(c, ref),
    // A worker of an older build has no `messages` query: the page then shows the call without them.
    turnMessages(c, turnWorkflowId(ref.sessionId, ref.turn)).catch(() => [] as Message[]),
  ]);
  return { ...view, transcript };
}

/** The call as its turn has it now: a decision needs only this, not the transcript. */
async function turnView(c: OpenWorkerClient, ref: CallRef): Promise<Omit<CallView, 'transcript'>> {
  const workflowId = turnWorkflowId(ref.sessionId, ref.turn);
  const status = await turnStatus(c, workflowId);
  const entry = status.ledger.find((e) => e.toolCallId === ref.toolCallId);
  if (!entry) throw new OpenWorkerError(`no tool call '${ref.toolCallId}' in ${workflowId}`, 'not_found');
  const fence = pendingFence(entry);
  const note = retryNote(entry);
  const actions = status.closed ? [] : actionsFor(entry);
  return {
    executionId: entry.executionId,
    ref,
    workflowId,
    turnState: status.state,
    entry,
    actions,
    notApplied: notApplied(status.decisions, ref.toolCallId),
    ...(actions.length && entry.approval?.signed
      ? {
          needsSignature: `this worker counts only signed decisions from ${entry.approval.allowed.join(', ') || 'its approvers'}: sign with this browser's key (registered in the worker's approvers file), or use the CLI (openworker-temporal approve ${ref.sessionId} ${ref.toolCallId} --key <name>)`,
        }
      : {}),
    ...(fence ? { fence: { until: fence.until, attempt: fence.attempt } } : {}),
    ...(note ? { retryNote: note } : {}),
  };
}

export interface DecisionRequest {
  executionId: string;
  ref?: Partial<CallRef>;
  action: Action;
  /** The digest of the arguments the operator saw: a decision on other arguments is refused. */
  argsDigest: string;
  reason?: string;
  result?: unknown;
  /** approve only: approve with edits, the call runs with these arguments instead (docs/approvals.md). */
  arguments?: Record<string, unknown>;
  /** Where the worker counts only signed decisions: the operator's browser signed `signRequest`'s message. */
  signature?: DecisionSignature;
}

const SIGNABLE: readonly Action[] = ['approve', 'reject', 'retry', 'retry_now', 'succeeded', 'failed'];

/** Checks a decision against the call as it is now; the view it was checked on. */
async function check(c: OpenWorkerClient, d: DecisionRequest): Promise<Omit<CallView, 'transcript'>> {
  const view = await turnView(c, await resolveCall(c, d.executionId, d.ref));
  if (view.entry.argsDigest !== d.argsDigest)
    throw new OpenWorkerError(
      `the arguments changed since the page showed them (${d.argsDigest.slice(0, 20)}…, now ${view.entry.argsDigest.slice(0, 20)}…): reload and decide again`,
      'ignored',
    );
  if (!view.actions.includes(d.action))
    throw new OpenWorkerError(
      `'${d.action}' does not apply to a call that is ${view.entry.state}${view.actions.length ? `; it takes ${view.actions.join(', ')}` : ''}`,
      'bad_input',
    );
  if (d.arguments !== undefined && d.action !== 'approve')
    throw new OpenWorkerError(
      `arguments go only with approve: '${d.action}' never edits (a standing approval approves later calls as the model asks them)`,
      'bad_input',
    );
  if (d.arguments !== undefined && (!d.arguments || typeof d.arguments !== 'object' || Array.isArray(d.arguments)))
    throw new OpenWorkerError("arguments must be a JSON object: the tool's arguments the call runs with", 'bad_input');
  return view;
}

/**
 * The exact bytes the operator's key signs for this decision (workflows/signatures.ts), as the turn
 * will rebuild them: the call, its arguments, the decision, the park and result it answers, who, when.
 */
export async function signRequest(
  c: OpenWorkerClient,
  by: string,
  d: DecisionRequest,
  now = new Date(),
): Promise<{ message: string; signedAt: string; by: string }> {
  const view = await check(c, d);
  if (!SIGNABLE.includes(d.action))
    throw new OpenWorkerError(
      `'${d.action}' cannot be signed here; a standing approval is made with the CLI`,
      'bad_input',
    );
  const recover = d.action !== 'approve' && d.action !== 'reject';
  const signedAt = now.toISOString();
  const message = signedMessage({
    executionId: view.executionId,
    // An edit is signed over the arguments that will run.
    argsDigest: d.arguments !== undefined ? argsDigest(d.arguments) : view.entry.argsDigest,
    decision: decisionToSign(
      recover ? 'recover' : d.action,
      d.action === 'retry_now' ? 'retry' : d.action,
      d.action === 'retry_now',
    ),
    by,
    signedAt,
    ...(recover ? { park: view.entry.events.filter((e) => e.type === 'recovery_required').length } : {}),
    ...(recover && d.result !== undefined ? { resultDigest: resultDigestOf(d.result) } : {}),
  });
  return { message: Buffer.from(message).toString('base64'), signedAt, by };
}

/** One decision, as the operator `by`, bound to the arguments they saw. */
export async function decide(c: OpenWorkerClient, by: string, d: DecisionRequest): Promise<DecisionOutcome> {
  const view = await check(c, d);
  const ref = view.ref;
  if (view.needsSignature && !d.signature && d.action !== 'reject')
    throw new OpenWorkerError(view.needsSignature, 'bad_input');
  if (d.signature && !SIGNABLE.includes(d.action))
    throw new OpenWorkerError(
      `'${d.action}' cannot be signed here; a standing approval is made with the CLI`,
      'bad_input',
    );
  const t = {
    sessionId: ref.sessionId,
    turn: ref.turn,
    toolCallId: ref.toolCallId,
    by,
    ...(d.signature ? { signature: d.signature } : {}),
  };
  switch (d.action) {
    case 'approve':
      return approve(c, {
        ...t,
        argsDigest: d.argsDigest,
        ...(d.arguments !== undefined ? { arguments: d.arguments } : {}),
      });
    case 'approve_session':
    case 'approve_target':
      return approveAlways(c, {
        ...t,
        argsDigest: d.argsDigest,
        always: d.action === 'approve_session' ? 'session' : 'target',
      });
    case 'reject':
      return reject(c, { ...t, ...(d.reason ? { reason: d.reason } : {}) });
    default:
      return recover(c, {
        ...t,
        decision: d.action === 'retry_now' ? 'retry' : d.action,
        ...(d.action === 'retry_now' ? { skipFence: true } : {}),
        ...(d.result !== undefined ? { result: d.result } : {}),
        ...(d.reason ? { reason: d.reason } : {}),
      });
  }
}

/** The answers API's body: the question's call, and the answer (ask_user, docs/approvals.md). */
export interface AnswerRequest {
  executionId: string;
  ref?: Partial<CallRef>;
  answer: string;
}

/** Answers an ask_user call as the operator; an answer not among its choices is refused with why. */
export async function answerCall(c: OpenWorkerClient, by: string, a: AnswerRequest): Promise<DecisionOutcome> {
  if (!a || typeof a.executionId !== 'string' || typeof a.answer !== 'string')
    throw new OpenWorkerError('send { executionId, answer, ref? }', 'bad_input');
  const ref = await resolveCall(c, a.executionId, a.ref);
  return answer(c, { sessionId: ref.sessionId, turn: ref.turn, toolCallId: ref.toolCallId, by, answer: a.answer });
}
