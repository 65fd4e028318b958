import type { ClientLike } from './own';
import { asOpenWorker } from './own';
import type { WaitedTurn } from './session';
import { activeTurn, checkSessionId, OpenWorkerError, turnStatus } from './session';
import { turnWorkflowId } from '../workflows/definitions';

export interface CancelledTurn extends WaitedTurn {
  /** False when the turn had not finished cancelling within the wait (no worker running, say). */
  settled: boolean;
}

/**
 * Cancels a session's running turn (or `turn`) through Temporal's cancellation: no further model
 * call or dispatch happens, settled results stay, calls not yet run get "interrupted" results and
 * calls that may have run get "outcome unknown … check before doing it again", so the transcript
 * stays valid and the session takes the next message.
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
  const before = await turnStatus(c, workflowId);
  if (before.closed)
    throw new OpenWorkerError(
      `turn ${before.turn} of session '${sessionId}' has already ended (${before.state}); nothing to cancel`,
      'bad_input',
    );
  await c.client.workflow.getHandle(workflowId).cancel();
  const until = Date.now() + (input.waitMs ?? 30_000);
  for (;;) {
    const s = await turnStatus(c, workflowId).catch(() => undefined);
    if (s?.closed) return { ...s, settled: true };
    if (Date.now() > until) return { ...(s ?? before), settled: false };
    await new Promise((r) => setTimeout(r, 200));
  }
}
