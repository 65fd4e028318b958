import type { WorkflowHandle } from '@temporalio/client';
import type { PeerObservation } from './peers';

/**
 * Confirms the kill happened where the cell says, from the outside: what the history and the
 * external system show right after the SIGKILL.
 */
export async function checkBarrier(
  point: string,
  handle: WorkflowHandle,
  observe: () => Promise<PeerObservation>,
): Promise<string> {
  const events = (await handle.fetchHistory()).events ?? [];
  const executes = new Set(
    events
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'executeTool')
      .map((e) => Number(e.eventId)),
  );
  const lastTaskCompleted = Math.max(
    0,
    ...events.filter((e) => e.workflowTaskCompletedEventAttributes).map((e) => Number(e.eventId)),
  );
  const executeEnded = events.filter((e) => {
    const id =
      e.activityTaskCompletedEventAttributes?.scheduledEventId ?? e.activityTaskFailedEventAttributes?.scheduledEventId;
    return id != null && executes.has(Number(id));
  });
  const effects = (await observe()).effects.length;
  const approved = events.some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'approve');
  const fail = (what: string) =>
    new Error(
      `at ${point}: ${what} (history ${events.length} events, ${executes.size} execute scheduled, ${effects} effects)`,
    );
  switch (point) {
    case 'turn.before_schedule':
      if (!approved || executes.size) throw fail('expected the approval in history and no execute activity scheduled');
      break;
    case 'turn.after_result':
      if (!executeEnded.length || Number(executeEnded.at(-1)!.eventId) < lastTaskCompleted)
        throw fail('expected a recorded result that no workflow task has processed');
      break;
    case 'tool.before_dispatch':
    case 'tool.after_dispatch':
      if (!executes.size || effects) throw fail('expected the execute activity scheduled and no effect yet');
      break;
    case 'tool.after_execute':
    case 'peer.hanging':
      if (effects !== 1 || executeEnded.length) throw fail('expected the effect applied and no result recorded');
      break;
  }
  return `barrier: killed exactly at ${point}`;
}
