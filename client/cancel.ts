import type { WorkflowHandle } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { OpenWorkerClient } from './connection';
import type { ClientLike } from './own';
import { asOpenWorker } from './own';
import type { WaitedTurn } from './session';
import { activeTurn, checkSessionId, OpenWorkerError, turnStatus, unreadTurn } from './session';
import { noWorkerMessage, pollerTimes, polledSince, type PollerTimes, unstick } from './workers';
import { OpenWorkerState, turnWorkflowId } from '../workflows/definitions';
import type { TurnState } from '../workflows/types';

export interface CancelledTurn extends WaitedTurn {
  /** False when the turn had not finished cancelling within the wait (no worker running, say). */
  settled: boolean;
  /**
   * Set when no worker took the cancel: it is recorded and the turn finishes cancelling once a worker
   * runs. Until then only the server's record is known: `state` is the turn's last published state
   * (its OpenWorkerState search attribute), and `ledger` and `decisions` are empty, not read.
   */
  noWorker?: string;
}

/** A worker takes a workflow task within milliseconds: after this long, the cancel asks whether one polls. */
const PICKUP_MS = 2_000;

/**
 * Cancels a session's running turn (or `turn`) through Temporal's cancellation: no further model
 * call or dispatch happens, settled results stay, calls not yet run get "interrupted" results and
 * calls that may have run get "outcome unknown … check before doing it again", so the transcript
 * stays valid and the session takes the next message. The cancel needs no worker: without one it
 * returns at once, `noWorker` saying so, and the turn finishes cancelling when one runs.
 */
export async function cancelTurn(
  client: ClientLike,
  input: { sessionId: string; turn?: number; waitMs?: number },
): Promise<CancelledTurn> {
  const c = asOpenWorker(client);
  const sessionId = checkSessionId(input.sessionId);
  let workflowId: string;
  if (input.turn !== undefined) {
    if (!Number.isSafeInteger(input.turn) || input.turn < 1)
      throw new OpenWorkerError(`\`turn\` must be a positive integer, got ${input.turn}`, 'bad_input');
    workflowId = turnWorkflowId(sessionId, input.turn);
  } else {
    const active = await activeTurn(c, sessionId);
    if (!active)
      throw new OpenWorkerError(
        `session '${sessionId}' has no running turn to cancel; see 'openworker-temporal show ${sessionId}'`,
        'not_found',
      );
    workflowId = active.workflowId;
  }
  const handle = c.client.workflow.getHandle(workflowId);
  const running = await isRunning(handle, workflowId);
  if (!running) {
    const ended = await turnStatus(c, workflowId);
    throw new OpenWorkerError(
      `turn ${ended.turn} of session '${sessionId}' has already ended (${ended.state}); nothing to cancel`,
      'bad_input',
    );
  }
  const before = await pollerTimes(c).catch(() => undefined);
  await unstick(c, handle); // a worker that replaced a dead one takes the cancel at once
  await handle.cancel();
  if (before && !(await workerTakes(c, handle, before))) return requested(c, handle, workflowId);
  const until = Date.now() + (input.waitMs ?? 30_000);
  let last: WaitedTurn | undefined;
  for (;;) {
    const s = await turnStatus(c, workflowId).catch(() => undefined);
    if (s?.closed) return { ...s, settled: true };
    last = s ?? last;
    if (Date.now() > until) return last ? { ...last, settled: false } : requested(c, handle, workflowId);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function isRunning(handle: WorkflowHandle, workflowId: string): Promise<boolean> {
  try {
    return (await handle.describe()).status.name === 'RUNNING';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError)
      throw new OpenWorkerError(`turn workflow ${workflowId} not found`, 'not_found');
    throw err;
  }
}

const SCHEDULED = temporal.api.enums.v1.PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED;

/**
 * Whether a worker takes the workflow task the cancel scheduled: it starts within PICKUP_MS, or a
 * worker polled meanwhile (busy, not gone; see polledSince).
 */
async function workerTakes(c: OpenWorkerClient, handle: WorkflowHandle, before: PollerTimes): Promise<boolean> {
  const until = Date.now() + PICKUP_MS;
  for (;;) {
    const d = await handle.describe();
    if (d.status.name !== 'RUNNING' || d.raw.pendingWorkflowTask?.state !== SCHEDULED) return true;
    if (Date.now() > until) return polledSince(before, await pollerTimes(c).catch(() => before));
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A cancel no worker has taken: what the server knows of the turn, and how to start a worker. */
async function requested(c: OpenWorkerClient, handle: WorkflowHandle, workflowId: string): Promise<CancelledTurn> {
  const d = await handle.describe();
  const state = (d.typedSearchAttributes.get(OpenWorkerState) as TurnState | undefined) ?? 'running';
  return {
    ...unreadTurn(workflowId, state),
    workflowId,
    closed: false,
    settled: false,
    noWorker: noWorkerMessage(c, c.address),
  };
}
