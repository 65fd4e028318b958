import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import { sessionStatusQuery } from '../workflows/definitions';
import { sessionWorkflowId } from '../workflows/ids';
import type { ScheduleActivities, ScheduledSessionState } from '../workflows/scheduled';
import { openScheduledMessages, sessionKnows } from '../workflows/scheduled';

/** How long the session has to answer; the local activity retries after that. */
const QUERY_MS = 20_000;

/**
 * What a scheduled run needs to know of its session: whether it runs, and which of the schedule's
 * messages it still holds open. One describe and one query, through the worker's own client.
 */
export const scheduleActivities: ScheduleActivities = {
  async scheduledSessionState({ sessionId, scheduleId, messageId }): Promise<ScheduledSessionState> {
    const ctx = Context.current();
    const handle = ctx.client.workflow.getHandle(sessionWorkflowId(sessionId));
    let d;
    try {
      d = await handle.describe();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return { missing: 'was not found' };
      throw err;
    }
    if (d.type !== 'session') return { missing: `is not a session (its workflow ID runs a '${d.type}' workflow)` };
    if (d.status.name !== 'RUNNING') return { missing: `has ended (its workflow is ${d.status.name.toLowerCase()})` };
    const status = await ctx.client.withDeadline(Date.now() + QUERY_MS, () => handle.query(sessionStatusQuery));
    return { open: openScheduledMessages(status, scheduleId), known: sessionKnows(status, messageId) };
  },
};
