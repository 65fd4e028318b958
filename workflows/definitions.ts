import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { Sinks } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type {
  ApproveSignal,
  DecisionsSignal,
  GrantSignal,
  Message,
  RevokeSignal,
  RecoverSignal,
  RejectSignal,
  SessionMessageSignal,
  MessageTurn,
  SessionStatus,
  TurnStatus,
} from './types';
import type { AnswerSignal, GrantsSignal, SteerSignal } from './protocol';

// The payloads are zod schemas in ./protocol (their types, parsers and Web UI descriptions derive from them).
// Names are part of the public protocol (docs/cli-and-protocol.md): users may send them with `temporal workflow signal`.
export const approveSignal = defineSignal<[ApproveSignal]>('approve');
export const rejectSignal = defineSignal<[RejectSignal]>('reject');
export const recoverSignal = defineSignal<[RecoverSignal]>('recover');
/** Several decisions in one signal, e.g. every call of a model response: one event, one workflow task. */
export const decisionsSignal = defineSignal<[DecisionsSignal]>('decisions');
export const turnStatusQuery = defineQuery<TurnStatus>('status');
/** This turn's messages so far, its request first (workflows/transcript.ts turnContext): what a call is decided in. */
export const turnMessagesQuery = defineQuery<Message[]>('messages');

export const messageSignal = defineSignal<[SessionMessageSignal]>('message');
export const grantSignal = defineSignal<[GrantSignal]>('grant');
export const revokeSignal = defineSignal<[RevokeSignal]>('revoke');
/**
 * Changes nothing: the workflow task it brings lets an idle session pinned to an old version move to
 * the current one (docs/deploy.md, "Deploying while turns wait"); sent in a batch by the operator.
 */
export const wakeSignal = defineSignal('wake');
/** Internal: the session sends its active grants to the running turn whenever they change. */
export const grantsSignal = defineSignal<[GrantsSignal]>('grants');
/** Internal: the session gives the running turn a message sent meanwhile (workflows/steering.ts). */
export const steerSignal = defineSignal<[SteerSignal]>('steer');
/** A person's answer to an ask_user call (workflows/answers.ts). */
export const answerSignal = defineSignal<[AnswerSignal]>('answer');
export const sessionStatusQuery = defineQuery<SessionStatus>('session');
/**
 * What became of one message: its turn, its refusal, or that it waits in the queue. Its answer stays
 * small however long the transcript, so a client waiting for a turn stores nothing (a query answer
 * over 16 KiB goes to the payload store like any payload).
 */
export const messageTurnQuery = defineQuery<MessageTurn, [string]>('messageTurn');

export const OpenWorkerState = defineSearchAttributeKey('OpenWorkerState', SearchAttributeType.KEYWORD);
export const OpenWorkerSession = defineSearchAttributeKey('OpenWorkerSession', SearchAttributeType.KEYWORD);
/** Every search attribute the workflows upsert: a namespace must have them registered (all Keyword). */
export const SEARCH_ATTRIBUTES = [OpenWorkerState, OpenWorkerSession] as const;
/**
 * The memo key a parked turn keeps its inbox rows under (workflows/inboxRows.ts, InboxMemo): the
 * inbox lists them from visibility without a query to the turn. Its value is current while
 * OpenWorkerState is a parked state; after that the search attribute already drops the turn.
 */
export const INBOX_MEMO = 'openworkerInbox';

export const DEFAULT_TASK_QUEUE = 'openworker';

/** The name OpenWorkerPlugin registers under, on workers and clients. */
export const PLUGIN_NAME = 'openworker-temporal';

/** The message id of the turn that resumes an imported session's pending tool calls. */
export const IMPORT_MESSAGE_ID = 'import';
/** Model calls per turn when nothing sets `maxIterations` (workflows/turnOptions.ts has the ranges). */
export { DEFAULT_MAX_ITERATIONS } from './turnOptions';

// The workflow-ID scheme lives in ./ids (one builder and one parser); re-exported for existing imports.
export { sessionWorkflowId, turnWorkflowId } from './ids';

/** The ApplicationFailure types the activities raise and the turn reads them by. */
export const FAILURE = {
  /** The tool said the effect did not happen (`throw new ToolFailure(…)`). */
  toolFailure: 'ToolFailure',
  notRegistered: 'ToolNotRegistered',
  invalidArguments: 'InvalidToolArguments',
  /** The turn refused the dispatch marker (a stale attempt, or the turn is cancelling). */
  /** The tool adapter was never called: safe to run again, dispatch marker or not. */
  notStarted: 'NotStarted',
  /** An unknown outcome that retrying cannot resolve: no automatic retry. */
  unknownFinal: 'UnknownOutcome',
  /** Any other failure once the adapter was called: unknown, and `idempotent` tools retry it. */
  outcomeUnknown: 'ToolOutcomeUnknown',
  /** The model call failed for good (bad request, credentials, script exhausted): never retried. */
  modelError: 'ModelError',
  /** The provider is unavailable for now: retried with backoff. */
  modelUnavailable: 'ModelUnavailable',
} as const;

/** Points inside the turn workflow where a crash test can stop the worker (activities/faults.ts). */
export type WorkflowFaultPoint = 'turn.before_schedule' | 'turn.after_result';

/**
 * Crash-test hooks, called through a sink so they cost nothing in history: the worker runs a sink
 * after the workflow task's commands are computed and before they are sent, so a worker that stops
 * there dies holding an unsent workflow task. A no-op unless OPENWORKER_FAULTS arms the point.
 */
export interface FaultSinks extends Sinks {
  openworkerFaults: { reached(point: WorkflowFaultPoint, tool: string, executionId: string): void };
}
