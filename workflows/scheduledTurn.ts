import {
  ApplicationFailure,
  getExternalWorkflowHandle,
  isCancellation,
  proxyLocalActivities,
  workflowInfo,
} from '@temporalio/workflow';
import { messageSignal } from './definitions';
import { sessionIdProblem, sessionWorkflowId } from './ids';
import { messageProblem } from './limits';
import type { ScheduleActivities, ScheduledTurnInput, ScheduledTurnResult } from './scheduled';
import { deliveryFor, scheduleIdProblem, scheduledMessageId } from './scheduled';

// A local activity: it runs on the worker that runs this workflow (a workflows-only worker too) and
// only reads (a describe and a query), so a retry is harmless.
const { scheduledSessionState } = proxyLocalActivities<ScheduleActivities>({
  startToCloseTimeout: '30s',
  retry: { maximumAttempts: 5, initialInterval: '1s' },
});

/**
 * One run of a schedule (docs/schedules.md): delivers the schedule's message to its session as a
 * queued message (a turn of its own, never steering the running turn), under a message ID derived
 * from this run's workflow ID, unless the schedule's previous message is still open there. A session
 * that is missing or has ended fails the run, with the reason, where the schedule lists its runs.
 */
export async function scheduledTurn(input: ScheduledTurnInput): Promise<ScheduledTurnResult> {
  const problem =
    scheduleIdProblem(input?.scheduleId) ?? sessionIdProblem(input?.sessionId) ?? messageProblem(input?.text);
  if (problem) throw ApplicationFailure.nonRetryable(`scheduled message refused: ${problem}`, 'BadInput');
  const { scheduleId, sessionId, text } = input;
  const messageId = scheduledMessageId(scheduleId, workflowInfo().workflowId);
  const state = await scheduledSessionState({ sessionId, scheduleId, messageId });
  if ('missing' in state) throw sessionMissing(sessionId, scheduleId, state.missing);
  const delivery = deliveryFor(state.open, messageId, state.known);
  if (!delivery.deliver) return { sessionId, messageId, delivered: false, skipped: delivery.skipped };
  try {
    await getExternalWorkflowHandle(sessionWorkflowId(sessionId)).signal(messageSignal, {
      text,
      messageId,
      queue: true,
    });
  } catch (err) {
    if (isCancellation(err)) throw err;
    // The session ended between the look and the signal.
    throw sessionMissing(sessionId, scheduleId, 'was not found or has ended');
  }
  return { sessionId, messageId, delivered: true };
}

function sessionMissing(sessionId: string, scheduleId: string, why: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    `session '${sessionId}' ${why}, so schedule '${scheduleId}' delivered nothing; delete the schedule ('openworker-temporal schedule delete ${scheduleId}') or create one for a running session`,
    'SessionMissing',
  );
}
