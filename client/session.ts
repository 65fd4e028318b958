import { randomUUID } from 'node:crypto';
import type { ClientLike } from './own';
import { asOpenWorker } from './own';
import {
  QueryNotRegisteredError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
} from '@temporalio/client';
import type { WorkflowHandle } from '@temporalio/client';
import {
  messageSignal,
  messageTurnQuery,
  sessionStatusQuery,
  turnMessagesQuery,
  turnStatusQuery,
  OpenWorkerSession,
} from '../workflows/definitions';
import { turnContext } from '../workflows/transcript';
import { parseWorkflowId, sessionIdProblem, sessionWorkflowId, turnProblem } from '../workflows/ids';
import type {
  Message,
  MessageTurn,
  SessionStatus,
  TurnOptions,
  TurnResult,
  TurnState,
  TurnStatus,
} from '../workflows/types';
import { messageProblem } from '../workflows/limits';
import { messageTurnIn } from '../workflows/steering';
import { turnOptionsProblem } from '../workflows/turnOptions';
import type { ContextStore } from '../runtime/contextStore';
import { contextStoreFor } from '../runtime/contextStore';
import type { Settings } from '../runtime/settings';
import type { OpenWorkerClient } from './connection';
import { OpenWorkerError } from './errors';
import { queryWithDeadline } from './workers';

export { OpenWorkerError, queryWithDeadline };
import { pendingBeats, withHeartbeatMarkers } from './liveDispatch';

/** The session ID, or a bad_input error naming what is wrong with it (workflows/ids.ts has the rule). */
export function checkSessionId(sessionId: string): string {
  const problem = sessionIdProblem(sessionId);
  if (problem) throw new OpenWorkerError(problem, 'bad_input');
  return sessionId;
}

/** The turn number, or a bad_input error. */
export function checkTurn(turn: number): number {
  const problem = turnProblem(turn);
  if (problem) throw new OpenWorkerError(problem, 'bad_input');
  return turn;
}

export interface SendMessageResult {
  sessionId: string;
  sessionWorkflowId: string;
  messageId: string;
}

export interface SendMessageInput {
  sessionId: string;
  text: string;
  messageId?: string;
  /** This turn's limits, over the session's (e.g. `{ maxIterations: 80 }`; ranges in workflows/turnOptions.ts). A message with them never steers. */
  options?: TurnOptions;
  /** The session's limits for every turn: only when this message starts the session (refused if one runs). */
  sessionOptions?: TurnOptions;
  /** Wait for a turn of its own instead of steering the running turn. */
  queue?: boolean;
}

/**
 * Sends a message to the session, starting the session workflow if needed. Works while no worker runs.
 * While a turn runs, the message steers it (its next model call sees it; the session status lists it
 * in that turn's `steered`); with `queue: true` (or `options`) it waits for a turn of its own.
 */
export async function sendMessage(client: ClientLike, input: SendMessageInput): Promise<SendMessageResult> {
  const c = asOpenWorker(client);
  const sessionId = checkSessionId(input.sessionId);
  // The session would refuse it too (and record why); saying so here loses no time.
  const problem =
    messageProblem(input.text) ??
    optionsProblem('options', input.options) ??
    optionsProblem('sessionOptions', input.sessionOptions);
  if (problem) throw new OpenWorkerError(`${problem}; nothing was sent`, 'bad_input');
  const messageId = input.messageId ?? randomUUID();
  const workflowId = sessionWorkflowId(sessionId);
  if (input.sessionOptions) await refuseIfRunning(c, sessionId, workflowId);
  let signaledRunId: string;
  try {
    ({ signaledRunId } = await c.client.workflow.signalWithStart('session', {
      workflowId,
      taskQueue: c.taskQueue,
      args: [{ sessionId, ...(input.sessionOptions ? { options: input.sessionOptions } : {}) }],
      signal: messageSignal,
      signalArgs: [
        {
          text: input.text,
          messageId,
          ...(input.options ? { options: input.options } : {}),
          ...(input.queue ? { queue: true } : {}),
        },
      ],
      // A session whose workflow ended is not silently recreated: its turn numbers (and so its
      // execution IDs, the idempotency keys of real effects) would start over.
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [{ key: OpenWorkerSession, value: sessionId }],
      staticSummary: `Session ${sessionId}`,
    }));
  } catch (err) {
    const full = signalLimitError(err, `message ${messageId}`, workflowId, SESSION_FULL);
    if (full) throw full;
    if (err instanceof WorkflowExecutionAlreadyStartedError) {
      const other = await notASession(c, workflowId);
      throw new OpenWorkerError(
        other
          ? `message not sent: ${workflowId} is taken by a closed '${other}' workflow, not a session; use another session id`
          : `session '${sessionId}' has ended (its workflow ${workflowId} is closed); use a new session id`,
        'bad_input',
      );
    }
    throw err;
  }
  // signalWithStart signals whatever runs under the ID, whatever its type. A workflow that another
  // Temporal client started there (or a turn of a session whose id an older build allowed) has no
  // message handler: the message is lost there, so it is an error, never "queued".
  // The signal is in: a check that fails now must not read as "not sent" (a re-send would be a new turn).
  const other = await notASession(c, workflowId, signaledRunId).catch(() => undefined);
  if (other)
    throw new OpenWorkerError(
      `message ${messageId} NOT delivered: ${workflowId} runs a '${other}' workflow, not a session, and drops it; use another session id`,
      'bad_input',
    );
  return { sessionId, sessionWorkflowId: workflowId, messageId };
}

/** Why `options` (the library option `name`) cannot be sent, naming the option in backticks, or undefined. */
function optionsProblem(name: string, options: TurnOptions | undefined): string | undefined {
  return turnOptionsProblem(options)?.replace(/^options(\.\w+)?/, (_, key?: string) => `\`${name}${key ?? ''}\``);
}

/** `sessionOptions` apply when a message starts the session: a running session would drop them unsaid. */
async function refuseIfRunning(c: OpenWorkerClient, sessionId: string, workflowId: string): Promise<void> {
  const d = await c.client.workflow
    .getHandle(workflowId)
    .describe()
    .catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    });
  if (d?.status.name === 'RUNNING')
    throw new OpenWorkerError(
      `session '${sessionId}' already runs and keeps the limits it started with; limits in \`sessionOptions\` apply only when a message starts a session: set \`options\` for this turn instead; nothing was sent`,
      'bad_input',
    );
}

/** How the server says a run has taken its limit of signals (history.maximumSignalsPerExecution). */
const SIGNAL_LIMIT = /exceeded workflow execution limit for signal events/i;

/**
 * A one-line error for a signal the server refused because the run has taken as many signals as one
 * run may take (`then` says what to do), or undefined for any other failure.
 */
export function signalLimitError(
  err: unknown,
  what: string,
  workflowId: string,
  then: string,
): OpenWorkerError | undefined {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (SIGNAL_LIMIT.test(e.message))
      return new OpenWorkerError(
        `${what} NOT delivered: ${workflowId} has taken the most signals one workflow run may take (the server's history.maximumSignalsPerExecution); ${then}`,
        'failed',
      );
  }
  return undefined;
}

/** What a refused message's sender can do: the session's next run takes messages again. */
export const SESSION_FULL =
  'the session takes messages again once it continues as new (between turns, at the latest every 100 turns): send it again then';

/** The workflow type under `workflowId` when it is not a session (one describe, answered by the server). */
async function notASession(c: OpenWorkerClient, workflowId: string, runId?: string): Promise<string | undefined> {
  const d = await c.client.workflow.getHandle(workflowId, runId).describe();
  return d.type === 'session' ? undefined : d.type;
}

/** The session's status, its whole transcript read from the payload store where the session holds it by reference. */
export async function sessionStatus(client: ClientLike, sessionId: string): Promise<SessionStatus> {
  const c = asOpenWorker(client);
  const handle = c.client.workflow.getHandle(sessionWorkflowId(checkSessionId(sessionId)));
  const status = await queryWithDeadline(c, `session '${sessionId}'`, handle, () => handle.query(sessionStatusQuery));
  if (!status.context) return status;
  const { context, ...rest } = status;
  const stored = await contextStoreOf(c)
    .read(context)
    .catch((err: Error) => {
      throw new OpenWorkerError(`session '${sessionId}': its stored transcript could not be read: ${err.message}`);
    });
  return { ...rest, transcript: [...stored, ...status.transcript] };
}

// One per client's settings: its cache serves a client that reads a session again and again.
const contextStores = new WeakMap<Settings, ContextStore>();
function contextStoreOf(c: OpenWorkerClient): ContextStore {
  let store = contextStores.get(c.settings);
  if (!store) contextStores.set(c.settings, (store = contextStoreFor(c.settings)));
  return store;
}

/**
 * What became of one message (its turn, its refusal, or still queued), without reading the
 * transcript. A session on a build before the `messageTurn` query answers from its status.
 */
export async function messageTurn(client: ClientLike, sessionId: string, messageId: string): Promise<MessageTurn> {
  const c = asOpenWorker(client);
  const handle = c.client.workflow.getHandle(sessionWorkflowId(checkSessionId(sessionId)));
  try {
    return await queryWithDeadline(c, `session '${sessionId}'`, handle, () =>
      handle.query(messageTurnQuery, messageId),
    );
  } catch (err) {
    if (!(err instanceof QueryNotRegisteredError)) throw err;
    return messageTurnIn(await sessionStatus(c, sessionId), messageId);
  }
}

/** The turn's status: from its result when it has closed, else from its query. */
export async function turnStatus(
  client: ClientLike,
  workflowId: string,
): Promise<TurnStatus & { workflowId: string; closed: boolean }> {
  const c = asOpenWorker(client);
  const handle: WorkflowHandle = c.client.workflow.getHandle(workflowId);
  let description;
  try {
    description = await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError)
      throw new OpenWorkerError(`turn workflow ${workflowId} not found`, 'not_found');
    throw err;
  }
  if (description.status.name === 'RUNNING') {
    const s = await queryWithDeadline(c, `turn ${workflowId}`, handle, () => handle.query(turnStatusQuery));
    // A dispatch marker the turn has not learned yet is in its running attempt's heartbeat.
    const beats = await pendingBeats(c.client.options.loadedDataConverter, description.raw.pendingActivities);
    return { ...s, ledger: withHeartbeatMarkers(s.ledger, beats), workflowId, closed: false };
  }
  if (description.status.name === 'COMPLETED') {
    const r = (await handle.result()) as TurnResult;
    const { messages: _messages, ...s } = r;
    return { ...s, workflowId, closed: true };
  }
  // A terminated or timed-out turn still has its ledger: a worker can answer a query from history.
  const last = await queryWithDeadline(c, `turn ${workflowId}`, handle, () => handle.query(turnStatusQuery)).catch(
    () => undefined,
  );
  if (last)
    return {
      ...last,
      state: description.status.name === 'CANCELLED' ? 'cancelled' : 'failed',
      error: `turn workflow ${description.status.name.toLowerCase()}`,
      workflowId,
      closed: true,
    };
  const state: TurnState = description.status.name === 'CANCELLED' ? 'cancelled' : 'failed';
  return {
    ...unreadTurn(workflowId, state),
    error: `turn workflow ${description.status.name.toLowerCase()}`,
    workflowId,
    closed: true,
  };
}

/** A turn's status where the turn could not be asked: what its workflow ID and state say, no ledger. */
export function unreadTurn(workflowId: string, state: TurnState): TurnStatus {
  const named = parseWorkflowId(workflowId);
  return {
    sessionId: named?.sessionId ?? '',
    turn: named?.kind === 'turn' ? named.turn : 0,
    state,
    iteration: 0,
    ledger: [],
    decisions: [],
  };
}

/**
 * The turn's own messages (its request first, then the latest): what one of its calls is decided
 * in. The session's transcript holds a turn's messages only once it has finished, so a parked turn
 * is read from its `messages` query, a completed one from its result.
 */
export async function turnMessages(c: OpenWorkerClient, workflowId: string): Promise<Message[]> {
  const handle: WorkflowHandle = c.client.workflow.getHandle(workflowId);
  const { status } = await handle.describe();
  if (status.name === 'COMPLETED') return turnContext(((await handle.result()) as TurnResult).messages);
  return queryWithDeadline(c, `turn ${workflowId}`, handle, () => handle.query(turnMessagesQuery));
}

/** The session's running turn, from the server's own record of pending children: no worker needed. */
export async function activeTurn(
  client: ClientLike,
  sessionId: string,
): Promise<{ workflowId: string; turn: number } | undefined> {
  const c = asOpenWorker(client);
  const handle = c.client.workflow.getHandle(sessionWorkflowId(checkSessionId(sessionId)));
  let description;
  try {
    description = await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError)
      throw new OpenWorkerError(
        `session '${sessionId}' not found; start it with 'openworker-temporal turn ${sessionId} "<message>"'`,
        'not_found',
      );
    throw err;
  }
  const children = description.raw.pendingChildren ?? [];
  const turns = children
    .map((ch) => ({ workflowId: ch.workflowId ?? '', named: parseWorkflowId(ch.workflowId ?? '') }))
    .flatMap(({ workflowId, named }) =>
      named?.kind === 'turn' && named.sessionId === sessionId ? [{ workflowId, turn: named.turn }] : [],
    )
    .sort((a, b) => b.turn - a.turn);
  return turns[0];
}

const NO_WORKER_GRACE_MS = 5_000;

const PARKED: readonly TurnState[] = ['awaiting_approval', 'recovery_required', 'awaiting_answer'];

export interface WaitedTurn extends TurnStatus {
  workflowId: string;
  closed: boolean;
}

/** Waits until the turn that handles `messageId` (its own, or the turn it steered) completes or parks for a human decision. */
export async function waitForTurn(
  client: ClientLike,
  input: { sessionId: string; messageId: string; timeoutMs?: number; pollMs?: number },
): Promise<WaitedTurn> {
  const c = asOpenWorker(client);
  const deadline = Date.now() + (input.timeoutMs ?? 120_000);
  const pollMs = input.pollMs ?? 200;
  // A worker that is starting is not polling yet: give it a moment before saying none runs.
  const noWorkerUntil = Date.now() + NO_WORKER_GRACE_MS;
  let workflowId: string | undefined;
  for (;;) {
    if (!workflowId) {
      const m = await messageTurn(c, input.sessionId, input.messageId).catch((err) => {
        if (err instanceof OpenWorkerError && err.code === 'no_worker' && Date.now() < noWorkerUntil) return undefined;
        throw err;
      });
      workflowId = m?.turn?.workflowId;
      const refused = m?.refused;
      if (refused)
        throw new OpenWorkerError(
          `session '${input.sessionId}' refused message ${input.messageId}: ${refused.reason}`,
          'bad_input',
        );
    }
    if (workflowId) {
      // The session lists a turn a moment before the server has started its workflow.
      const t = await turnStatus(c, workflowId).catch((err) => {
        if (err instanceof OpenWorkerError && err.code === 'not_found') return undefined;
        if (err instanceof OpenWorkerError && err.code === 'no_worker' && Date.now() < noWorkerUntil) return undefined;
        throw err;
      });
      if (t && (t.closed || PARKED.includes(t.state))) return t;
    }
    if (Date.now() > deadline) {
      const where = workflowId ? ` (${workflowId})` : ' (still queued behind the running turn; see inbox)';
      throw new OpenWorkerError(
        `timed out waiting for the turn of message ${input.messageId} in session '${input.sessionId}'${where}`,
        'timeout',
      );
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
}
