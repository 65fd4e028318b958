import type { WorkflowHandle } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { OpenWorkerState } from '../workflows/definitions';
import { turnWorkflowId } from '../workflows/ids';
import type { TurnState } from '../workflows/types';
import type { StreamCursor, StreamSnapshot } from '../runtime/textStream';
import { nextDelta, streamOf } from '../runtime/textStream';
import type { ClientLike } from './own';
import { asOpenWorker } from './own';
import { pendingBeats } from './liveDispatch';
import { OpenWorkerError, activeTurn, checkSessionId, checkTurn, messageTurn } from './session';

// Streaming (docs/chat-and-webui.md): a model call publishes its text so far as its activity's
// heartbeat details, which the server keeps with the pending activity (not in history). Readers
// describe the turn, which needs only the Temporal server: a client on another host than the worker
// streams too. A missed poll loses nothing; the whole answer lands in the turn and the transcript.

/** One step of a model call's text as a reader sees it. */
export interface TextEvent {
  /** The turn workflow. */
  workflowId: string;
  /** The model call's iteration in the turn. */
  iteration: number;
  /** What is new since the last event (after `restart`, the whole text so far). */
  delta: string;
  /** The text so far of this model call, as far as this reader has seen it. */
  text: string;
  /** A new model call, or a retried attempt starting over: what was shown is replaced. */
  restart: boolean;
  /** The reader fell behind the heartbeat's window and missed characters before `delta`. */
  gap: boolean;
  /** The model has finished its text. */
  done: boolean;
}

export interface StreamTurnInput {
  sessionId?: string;
  /** The message whose turn to follow (its own, or the turn it steered). */
  messageId?: string;
  /** The turn workflow to follow; else the turn of `messageId`, else the session's running turn. */
  workflowId?: string;
  /** How often to describe the turn (default 100 ms). */
  pollMs?: number;
  /** Stop after this long (default 10 minutes): the iterator ends, it does not throw. */
  timeoutMs?: number;
  /** Ends the iterator early. */
  signal?: AbortSignal;
  /** Keep following while the turn waits for a decision (end only when it closes): what chat does. */
  throughDecisions?: boolean;
}

const PARKED: readonly string[] = ['awaiting_approval', 'recovery_required'] satisfies TurnState[];

/** What one describe of a turn says: its model call's snapshot, and whether the turn still runs a model. */
export interface TurnStreamState {
  snapshot?: StreamSnapshot;
  /** Closed, or parked for a human: no more text will come until a decision. */
  ended: boolean;
  /** The turn workflow has closed. */
  closed: boolean;
}

/** The running model call's text of a turn (undefined snapshot when none is streaming). */
export async function turnStreamState(client: ClientLike, workflowId: string): Promise<TurnStreamState> {
  const c = asOpenWorker(client);
  const handle: WorkflowHandle = c.client.workflow.getHandle(workflowId);
  const d = await handle.describe();
  if (d.status.name !== 'RUNNING') return { ended: true, closed: true };
  const state = d.typedSearchAttributes.get(OpenWorkerState);
  const pending = (d.raw.pendingActivities ?? []).filter((p) => p.activityType?.name === 'callModel');
  const beats = await pendingBeats(c.client.options.loadedDataConverter, pending);
  const snapshot = beats.map((b) => streamOf(b.heartbeat)).find((s) => s !== undefined);
  const parked = !pending.length && state !== undefined && PARKED.includes(state);
  return { ...(snapshot ? { snapshot } : {}), ended: parked, closed: false };
}

/**
 * The text of a turn's model calls as they are generated: yields each new piece until the turn
 * closes or parks for a decision, `timeoutMs` passes or `signal` aborts. A model call answered
 * without streaming yields nothing; the turn's result and the transcript hold every answer whole.
 */
export async function* streamTurn(client: ClientLike, input: StreamTurnInput): AsyncGenerator<TextEvent, void> {
  const c = asOpenWorker(client);
  if (!input.workflowId && !input.sessionId)
    throw new OpenWorkerError('streamTurn needs `workflowId`, or `sessionId` (with `messageId`)', 'bad_input');
  const sessionId = input.sessionId ? checkSessionId(input.sessionId) : '';
  const pollMs = Math.max(20, input.pollMs ?? 100);
  const deadline = Date.now() + (input.timeoutMs ?? 600_000);
  let workflowId = input.workflowId;
  let cursor: StreamCursor | undefined;
  let text = '';
  while (!input.signal?.aborted && Date.now() < deadline) {
    if (!workflowId)
      workflowId = input.messageId
        ? (await messageTurn(c, sessionId, input.messageId)).turn?.workflowId
        : (await activeTurn(c, sessionId))?.workflowId;
    const state = workflowId ? await turnStreamState(c, workflowId).catch(notStarted) : undefined;
    if (workflowId && state?.snapshot) {
      const step = nextDelta(cursor, state.snapshot);
      cursor = step.cursor;
      text = step.restart || !text ? step.delta : text + step.delta;
      if (step.delta || step.restart)
        yield {
          workflowId,
          iteration: step.cursor.iteration,
          delta: step.delta,
          text,
          restart: step.restart,
          gap: step.gap,
          done: state.snapshot.done === true,
        };
    }
    if (state?.closed || (state?.ended && !input.throughDecisions)) return;
    await sleep(pollMs, input.signal);
  }
}

// The session names a turn a moment before the server has started its workflow.
const notStarted = (err: unknown): undefined => {
  if (err instanceof WorkflowNotFoundError) return undefined;
  throw err;
};

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });

/** A turn's running model call, as the approvals page shows it (GET /api/turns/:sessionId/:turn/text). */
export interface TurnText {
  workflowId: string;
  /** The turn has closed: no more text. */
  closed: boolean;
  /** The model call streaming now, if any: its iteration, and the end of its text so far. */
  running?: { iteration: number; text: string; truncated: boolean; done: boolean };
}

export async function turnText(client: ClientLike, sessionId: string, turn: number): Promise<TurnText> {
  const workflowId = turnWorkflowId(checkSessionId(sessionId), checkTurn(turn));
  const state = await turnStreamState(client, workflowId).catch((err) => {
    if (err instanceof WorkflowNotFoundError)
      throw new OpenWorkerError(`turn workflow ${workflowId} not found`, 'not_found');
    throw err;
  });
  const s = state.snapshot;
  return {
    workflowId,
    closed: state.closed,
    ...(s ? { running: { iteration: s.iteration, text: s.text, truncated: s.offset > 0, done: s.done === true } } : {}),
  };
}
