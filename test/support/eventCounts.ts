import { temporal } from '@temporalio/proto';
import type { OpenWorkerClient } from '../../client/connection';

/**
 * History events one tool call costs: from the approval signal (or, for a call that needs none,
 * its activity being scheduled) through the workflow task that processes its result.
 */
export async function eventsForCall(
  c: OpenWorkerClient,
  workflowId: string,
  activityId: string,
  approved: boolean,
): Promise<string[]> {
  const history = await c.client.workflow.getHandle(workflowId).fetchHistory();
  const events = history.events ?? [];
  const type = (i: number) =>
    String(temporal.api.enums.v1.EventType[events[i]!.eventType ?? 0]).replace('EVENT_TYPE_', '');
  const scheduledAt = events.findIndex((e) => e.activityTaskScheduledEventAttributes?.activityId === activityId);
  const scheduledId = events[scheduledAt]?.eventId?.toString();
  let start = scheduledAt;
  if (approved) while (start > 0 && !events[start]!.workflowExecutionSignaledEventAttributes) start--;
  else while (start > 0 && type(start - 1) !== 'WORKFLOW_TASK_COMPLETED') start--;
  let end = events.findIndex(
    (e) => e.activityTaskCompletedEventAttributes?.scheduledEventId?.toString() === scheduledId,
  );
  while (end < events.length && type(end) !== 'WORKFLOW_TASK_COMPLETED') end++;
  if (scheduledAt < 0 || end >= events.length) throw new Error(`activity ${activityId} not found in ${workflowId}`);
  return events.slice(start, end + 1).map((_, i) => type(start + i));
}

const Cause = temporal.api.enums.v1.WorkflowTaskFailedCause;
// A reset and a signal racing a completion fail a task by design; a throw or a nondeterminism does not.
const BENIGN = new Set<number>([
  Cause.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW,
  Cause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
]);

/**
 * The workflow task failures in a history, each as its cause and message. A failed task is retried
 * forever on the same history, so a wedged turn shows up here first; tests assert none.
 */
export function taskFailuresIn(events: readonly temporal.api.history.v1.IHistoryEvent[]): string[] {
  return events.flatMap((e) => {
    const a = e.workflowTaskFailedEventAttributes;
    if (!a || BENIGN.has(a.cause ?? 0)) return [];
    return [`${String(Cause[a.cause ?? 0])}: ${a.failure?.message ?? '(no message)'}`];
  });
}

export async function workflowTaskFailures(c: OpenWorkerClient, workflowId: string): Promise<string[]> {
  return taskFailuresIn((await c.client.workflow.getHandle(workflowId).fetchHistory()).events ?? []);
}
