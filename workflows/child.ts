import type { ChildWorkflowHandle } from '@temporalio/workflow';
import { ApplicationFailure, ParentClosePolicy, WorkflowIdReusePolicy, startChild } from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { OpenWorkerSession, OpenWorkerState } from './definitions';
import { sessionIdProblem, turnProblem, turnWorkflowId } from './ids';
import { messageProblem } from './limits';
import { unpairedToolCalls } from './transcript';
import { turnOptionsProblem } from './turnOptions';
import { agentTurn } from './turn';
import type { Message, TurnOptions, TurnResult } from './types';

/** One agent turn run from your own workflow. */
export interface AgentTurnRequest {
  /** Names the conversation; execution IDs and the turn's workflow ID derive from it. */
  sessionId: string;
  /** The turn's number in the session, from 1; each (sessionId, turn) runs at most once. */
  turn: number;
  message: string;
  /** The conversation so far: earlier turns' `messages`, each tool call paired with one result. */
  history?: Message[];
  options?: TurnOptions;
}

/**
 * Starts one agent turn as a child workflow of yours, on your task queue, with the ID
 * `session-<sessionId>-turn-<turn>`: its protected calls wait for the same approve / reject /
 * recover signals (send them from your workflow with the handle, or from anywhere: the CLI's
 * `approve`, the inbox and the approvals page find it), and its execution IDs are those a session
 * would give it. Bad input fails your workflow with a non-retryable `BadInput` naming what was
 * wrong (never a task failure that replays forever).
 */
export async function startAgentTurn(request: AgentTurnRequest): Promise<ChildWorkflowHandle<typeof agentTurn>> {
  const problem = agentTurnProblem(request);
  if (problem) throw ApplicationFailure.nonRetryable(`agent turn: ${problem}`, 'BadInput');
  const workflowId = turnWorkflowId(request.sessionId, request.turn);
  try {
    return await startChild(agentTurn, {
      workflowId,
      args: [
        {
          sessionId: request.sessionId,
          turn: request.turn,
          history: request.history ?? [],
          message: request.message,
          ...(request.options ? { options: request.options } : {}),
        },
      ],
      // A turn ID is never reused: its execution IDs are the idempotency keys of real effects.
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
      parentClosePolicy: ParentClosePolicy.TERMINATE,
      typedSearchAttributes: [
        { key: OpenWorkerSession, value: request.sessionId },
        { key: OpenWorkerState, value: 'running' },
      ],
      staticSummary: `Turn ${request.turn} of session ${request.sessionId}`,
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    throw ApplicationFailure.nonRetryable(
      `agent turn: ${workflowId} already exists (a session's turn, or one started before); a turn ID is never reused: use the next turn number or another session ID`,
      'TurnExists',
    );
  }
}

/** Why `request` cannot start a turn (one line), or undefined. Anything may arrive: trust nothing. */
export function agentTurnProblem(request: unknown): string | undefined {
  if (!request || typeof request !== 'object') return 'the request must be { sessionId, turn, message, history? }';
  const r = request as Partial<Record<keyof AgentTurnRequest, unknown>>;
  const history = r.history ?? [];
  return (
    sessionIdProblem(r.sessionId) ??
    turnProblem(r.turn) ??
    messageProblem(r.message) ??
    (Array.isArray(history) && history.every((m) => m && typeof m === 'object' && typeof m.role === 'string')
      ? unpairedToolCalls(history as Message[])[0]
      : 'history must be an array of messages ({ role, content, ... })') ??
    turnOptionsProblem(r.options)
  );
}

/** startAgentTurn, then its result: the turn's state, text, ledger and the messages to keep as history. */
export async function runAgentTurn(request: AgentTurnRequest): Promise<TurnResult> {
  return (await startAgentTurn(request)).result();
}
