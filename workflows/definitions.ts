import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { Sinks } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type {
  ApproveSignal,
  DecisionsSignal,
  DispatchAnswer,
  DispatchRequest,
  Grant,
  GrantSignal,
  RevokeSignal,
  RecoverSignal,
  RejectSignal,
  SessionMessageSignal,
  SessionStatus,
  TurnStatus,
} from './types';

// Names are part of the public protocol (README): users may send them with `temporal workflow signal`.
export const approveSignal = defineSignal<[ApproveSignal]>('approve');
export const rejectSignal = defineSignal<[RejectSignal]>('reject');
export const recoverSignal = defineSignal<[RecoverSignal]>('recover');
/** Several decisions in one signal, e.g. every call of a model response: one event, one workflow task. */
export const decisionsSignal = defineSignal<[DecisionsSignal]>('decisions');
export const turnStatusQuery = defineQuery<TurnStatus>('status');

/** Internal: the execute activity asks its turn for permission to call the tool adapter. */
export const dispatchUpdate = defineUpdate<DispatchAnswer, [DispatchRequest]>('dispatch');

export const messageSignal = defineSignal<[SessionMessageSignal]>('message');
export const grantSignal = defineSignal<[GrantSignal]>('grant');
export const revokeSignal = defineSignal<[RevokeSignal]>('revoke');
/** Internal: the session sends its active grants to the running turn whenever they change. */
export const grantsSignal = defineSignal<[{ version: number; grants: Grant[] }]>('grants');
export const sessionStatusQuery = defineQuery<SessionStatus>('session');

export const OpenWorkerState = defineSearchAttributeKey('OpenWorkerState', SearchAttributeType.KEYWORD);
export const OpenWorkerSession = defineSearchAttributeKey('OpenWorkerSession', SearchAttributeType.KEYWORD);

export const DEFAULT_TASK_QUEUE = 'openworker';

/** The message id of the turn that resumes an imported session's pending tool calls. */
export const IMPORT_MESSAGE_ID = 'import';
export const DEFAULT_MAX_ITERATIONS = 12;

export const sessionWorkflowId = (sessionId: string): string => `session-${sessionId}`;
export const turnWorkflowId = (sessionId: string, turn: number): string => `session-${sessionId}-turn-${turn}`;

/** Failure type for "the tool adapter was never called": safe to run again, dispatch marker or not. */
export const NOT_STARTED = 'NotStarted';

/** Failure type for an unknown outcome that retrying cannot resolve: no automatic retry. */
export const UNKNOWN_FINAL = 'UnknownOutcome';

/** Points inside the turn workflow where a crash test can stop the worker (activities/faults.ts). */
export type WorkflowFaultPoint = 'turn.before_schedule' | 'turn.after_result' | 'turn.dispatch';

/**
 * Crash-test hooks, called through a sink so they cost nothing in history: the worker runs a sink
 * after the workflow task's commands are computed and before they are sent, so a worker that stops
 * there dies holding an unsent workflow task. A no-op unless OPENWORKER_FAULTS arms the point.
 */
export interface FaultSinks extends Sinks {
  openworkerFaults: { reached(point: WorkflowFaultPoint, tool: string, executionId: string): void };
}
