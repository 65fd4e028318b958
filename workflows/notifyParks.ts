import { CancellationScope, isCancellation, log, proxyActivities, workflowInfo } from '@temporalio/workflow';
import { messageOf } from './failures';
import { notifyActivityId, notifyTaskQueue } from './ids';
import type { LedgerInput } from './ledger';
import { newParks, notificationKey, parkNotice } from './notifications';
import type { LedgerEntry, NotifyActivities, PlannedCall, TurnInput } from './types';

/**
 * Attempts of one park's notify activity. Retries add no history event (only the last attempt's
 * outcome is recorded), and a notifier that is down uses none: the task waits in the queue. With
 * the backoff below, 20 attempts give a receiver that keeps failing about 1 h 45 min
 * (1 + 2 + … + 512 s, then 10 min each) before the park is given up on, with a warning in the log.
 */
export const NOTIFY_MAX_ATTEMPTS = 20;

/**
 * A notifier that dies mid-activity is noticed within the heartbeat timeout (it heartbeats after
 * each URL it delivered; each POST is bounded well inside it) and another one, or the same one
 * restarted, retries without the URLs already delivered. No schedule-to-start limit: a park waits for
 * a notifier that is down and is delivered when one comes back.
 */
export const NOTIFY_ACTIVITY_OPTIONS = {
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '10 minutes',
    maximumAttempts: NOTIFY_MAX_ATTEMPTS,
  },
} as const;

/**
 * The turn's side of notifications: each park of a call planned with `notify` starts one notify
 * activity on the notify task queue and goes on without waiting; when it completes, the call's
 * ledger records `notified`. A turn whose calls were planned without `notify` (no notifier
 * deployed) schedules nothing.
 */
export function createParkNotifier(deps: {
  input: Pick<TurnInput, 'sessionId' | 'turn'>;
  entries: () => LedgerEntry[];
  record: (toolCallId: string, change: LedgerInput) => LedgerEntry;
  /** The turn is being cancelled: a park now is its last state, and nobody could act on a message. */
  cancelled: () => boolean;
}) {
  const watched = new Set<string>();
  const started = new Set<string>();
  const taskQueue = notifyTaskQueue(workflowInfo().taskQueue);

  const start = (entry: LedgerEntry, park: string): void => {
    const notice = parkNotice(deps.input, entry, park);
    // Not cancelled with the turn, and not when the call leaves its park: a cancel would add two
    // events (requested, cancelled) to every approved park's history for a message that is usually
    // out already. A late message links to the call's page, which shows where the call is now; once
    // the turn has ended the server drops what was not started.
    // Its ID is the park's (a proxy's options are per proxy, so one proxy per park).
    const { notifyPark } = proxyActivities<NotifyActivities>({
      ...NOTIFY_ACTIVITY_OPTIONS,
      taskQueue,
      activityId: notifyActivityId(entry.executionId, park),
    });
    const done = CancellationScope.nonCancellable(() => notifyPark(notice));
    void done.then(
      (r) =>
        deps.record(entry.toolCallId, {
          type: 'notified',
          park,
          by: String(r.by),
          delivered: Number(r.delivered) || 0,
          failed: Number(r.failed) || 0,
        }),
      (err) => {
        if (!isCancellation(err))
          log.warn(`park ${notificationKey(entry.executionId, park)} not notified: ${messageOf(err)}`);
      },
    );
  };

  return {
    /** Calls of a model response (or an import): those planned with `notify` have their parks notified. */
    watch(calls: readonly PlannedCall[]): void {
      for (const c of calls) if (c.notify) watched.add(c.toolCallId);
    },
    /** After the ledger changed (the turn publishes): each new park of a watched call gets its activity. */
    check(): void {
      if (!watched.size || deps.cancelled()) return;
      for (const { entry, park } of newParks(deps.entries(), watched, started)) {
        started.add(notificationKey(entry.executionId, park));
        start(entry, park);
      }
    },
  };
}
