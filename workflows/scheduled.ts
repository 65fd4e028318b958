// Scheduled turns (docs/schedules.md): the IDs a schedule's runs and messages get, and whether a run
// delivers its message. Pure and sandbox-safe: the scheduledTurn workflow, its activity and the
// client use the same functions.
//
//   schedule            <scheduleId>                       letters, digits, '.', '_', '-' (no ':')
//   its runs            scheduled-<scheduleId>-<time>      the server appends the run's nominal time
//   a run's message     schedule:<scheduleId>:<time>       or schedule:<scheduleId>:<run's workflow ID>
//
// The message ID is the run's own: a run retried or started twice under its workflow ID sends the same
// ID, which the session takes once. No ':' in a schedule ID, so `schedule:<id>:` names one schedule's
// messages and no other's.

import type { QueuedMessage, TurnSummary } from './types';

const SCHEDULE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
const RUN_PREFIX = 'scheduled-';
const MESSAGE_PREFIX = 'schedule:';
/** The session keeps at most this much of a message ID. */
const MESSAGE_ID_MAX = 200;

/** The workflow type a schedule starts. */
export const SCHEDULED_TURN_WORKFLOW = 'scheduledTurn';

/** Why `scheduleId` cannot name a schedule (one line that says what to do), or undefined. */
export function scheduleIdProblem(scheduleId: unknown): string | undefined {
  return typeof scheduleId === 'string' && SCHEDULE_ID.test(scheduleId)
    ? undefined
    : `invalid schedule id '${String(scheduleId)}': use 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit`;
}

/** The workflow ID the schedule's action names; the server appends each run's time to it. */
export const scheduledRunWorkflowId = (scheduleId: string): string => `${RUN_PREFIX}${scheduleId}`;

/** What every message of this schedule's runs starts with. */
export const scheduleMessagePrefix = (scheduleId: string): string => `${MESSAGE_PREFIX}${scheduleId}:`;

/** The message ID of the run `runWorkflowId` of schedule `scheduleId`: the same for the same run, always. */
export function scheduledMessageId(scheduleId: string, runWorkflowId: string): string {
  const own = `${scheduledRunWorkflowId(scheduleId)}-`;
  const suffix = runWorkflowId.startsWith(own) ? runWorkflowId.slice(own.length) : runWorkflowId;
  return `${scheduleMessagePrefix(scheduleId)}${suffix}`.slice(0, MESSAGE_ID_MAX);
}

/** One of this schedule's messages that the session has not finished with: queued, or its turn runs (or is parked). */
export interface OpenScheduledMessage {
  messageId: string;
  /** Its turn's number while the turn runs; absent while the message waits in the queue. */
  turn?: number;
}

/** The schedule's messages the session still holds open, from its status (its `turns` and `pending`). */
export function openScheduledMessages(
  status: { turns: readonly TurnSummary[]; pending: readonly QueuedMessage[] },
  scheduleId: string,
): OpenScheduledMessage[] {
  const prefix = scheduleMessagePrefix(scheduleId);
  const running = status.turns
    .filter((t) => t.state === 'running' && t.messageId.startsWith(prefix))
    .map((t) => ({ messageId: t.messageId, turn: t.n }));
  const queued = status.pending
    .filter((m) => m.messageId.startsWith(prefix) && !running.some((r) => r.messageId === m.messageId))
    .map((m) => ({ messageId: m.messageId }));
  return [...running, ...queued];
}

export type Delivery = { deliver: true } | { deliver: false; skipped: string };

/**
 * The overlap policy: a run delivers its message unless an earlier message of the same schedule is
 * still open in the session (queued, or its turn running or parked for a decision); then it skips,
 * so a turn that waits a week for approval does not come back to 168 queued hourly turns. A run whose
 * message the session already has (`known`: a retry, or an action in the same second, which gets the
 * same workflow ID) delivers nothing more.
 */
export function deliveryFor(open: readonly OpenScheduledMessage[], messageId: string, known = false): Delivery {
  if (known || open.some((m) => m.messageId === messageId))
    return {
      deliver: false,
      skipped: `skipped: the session has message ${messageId} already (a run under the same workflow ID delivered it)`,
    };
  const earlier = open[0];
  if (!earlier) return { deliver: true };
  const where =
    earlier.turn !== undefined
      ? `its turn ${earlier.turn} has not finished (running or waiting for a decision)`
      : 'it is still queued in the session';
  return {
    deliver: false,
    skipped: `skipped: the previous scheduled message ${earlier.messageId} is still open (${where})`,
  };
}

/** What a schedule's action starts the scheduledTurn workflow with. */
export interface ScheduledTurnInput {
  scheduleId: string;
  sessionId: string;
  text: string;
}

/** What a scheduled run did: delivered its message, or skipped it and why. */
export interface ScheduledTurnResult {
  sessionId: string;
  messageId: string;
  delivered: boolean;
  skipped?: string;
}

/** What the scheduledTurn workflow's activity saw of the session. */
export type ScheduledSessionState = { missing: string } | { open: OpenScheduledMessage[]; known: boolean };

/** Whether the session has taken `messageId` (a turn ran or runs it, it steered one, or it is queued). */
export function sessionKnows(
  status: { turns: readonly TurnSummary[]; pending: readonly QueuedMessage[] },
  messageId: string,
): boolean {
  return (
    status.pending.some((m) => m.messageId === messageId) ||
    status.turns.some((t) => t.messageId === messageId || t.steered?.includes(messageId))
  );
}

/** The activity the scheduledTurn workflow runs (locally, on the worker that runs the workflow). */
export interface ScheduleActivities {
  scheduledSessionState(input: {
    sessionId: string;
    scheduleId: string;
    messageId: string;
  }): Promise<ScheduledSessionState>;
}
