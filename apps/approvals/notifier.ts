import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { Worker } from '@temporalio/worker';
import { faultPoint } from '../../activities/faults';
import type { OpenWorkerClient } from '../../client/connection';
import { resolveConnectConfig } from '../../runtime/connection';
import { defaultDataConverter } from '../../runtime/dataConverter';
import { connectWorker } from '../../worker/worker';
import { notifyTaskQueue } from '../../workflows/ids';
import { notificationKey } from '../../workflows/notifications';
import { NOTIFY_MAX_ATTEMPTS } from '../../workflows/notifyParks';
import type { NotifyActivities, NotifyHeartbeat, NotifyParkResult, ParkNotice } from '../../workflows/types';

// The approvals app's notifier: an activity worker (no workflows) on the notify task queue. A turn
// schedules one notify activity per park of its calls (workflows/notifyParks.ts); whichever notifier
// takes it POSTs the message to every URL, heartbeating after each delivery so a retry (after this
// process died, or a URL failed) skips the URLs already delivered. Any number of replicas may run:
// Temporal gives each attempt to one of them, and a notifier costs work per new park only.

export interface NotifierOptions {
  client: OpenWorkerClient;
  urls: string[];
  /** Where the approvals page is reached by the people notified; links point there. */
  publicUrl: string;
  /** Recorded as who sent (this replica). */
  replica: string;
  log?: (line: string) => void;
}

/** How long one POST may take: well inside the activity's heartbeat timeout (10 s). */
const POST_TIMEOUT_MS = 5000;

export const callLink = (publicUrl: string, c: Pick<ParkNotice, 'executionId' | 'sessionId' | 'turn' | 'toolCallId'>) =>
  `${publicUrl.replace(/\/+$/, '')}/#/calls/${c.executionId}?session=${encodeURIComponent(c.sessionId)}&turn=${c.turn}&call=${encodeURIComponent(c.toolCallId)}`;

/** A Slack incoming-webhook body (`text`) that also carries the facts as JSON; never the arguments. */
export function messageFor(c: ParkNotice, link: string): Record<string, unknown> {
  const what = `${c.tool}${c.target ? ` → ${c.target}` : ''}`;
  const text =
    c.state === 'awaiting_approval'
      ? `${what} is waiting for approval in session ${c.sessionId} (turn ${c.turn}, call ${c.toolCallId}): ${link}`
      : c.state === 'awaiting_answer'
        ? `The agent asks in session ${c.sessionId} (turn ${c.turn}, call ${c.toolCallId}): ${c.question ?? ''} ${link}`
        : `${what} needs a recovery decision in session ${c.sessionId} (turn ${c.turn}, call ${c.toolCallId})${c.reason ? `: ${c.reason}` : ''}. ${link}`;
  return {
    text,
    openworker: {
      event: c.state,
      park: c.park,
      executionId: c.executionId,
      sessionId: c.sessionId,
      turn: c.turn,
      toolCallId: c.toolCallId,
      tool: c.tool,
      ...(c.target ? { target: c.target } : {}),
      ...(c.reason ? { reason: c.reason } : {}),
      argsDigest: c.argsDigest,
      since: c.since,
      link,
    },
  };
}

/** A URL as heartbeat details name it: a digest, since a webhook URL is often its own secret. */
export const urlDigest = (url: string): string => createHash('sha256').update(url).digest('hex').slice(0, 16);

/**
 * What an attempt does once every URL it tried has answered: complete when none failed; on the last
 * attempt, complete with what was delivered (the turn records `notified` with the failures counted);
 * otherwise fail, so Temporal retries the failed URLs after its backoff. Nothing delivered on the
 * last attempt fails too: the park is given up on, and nothing says it was notified.
 */
export function attemptVerdict(o: {
  delivered: number;
  failed: number;
  attempt: number;
  maxAttempts: number;
}): 'complete' | 'retry' | 'give_up' {
  if (o.failed === 0) return 'complete';
  if (o.attempt < o.maxAttempts) return 'retry';
  return o.delivered > 0 ? 'complete' : 'give_up';
}

/** The notify activity, for `urls`: POSTs what is not delivered yet, concurrently, heartbeating each delivery. */
export function notifyActivities(o: Omit<NotifierOptions, 'client'>): NotifyActivities {
  const log = o.log ?? ((line: string) => console.error(line));
  const post = async (url: string, body: string, key: string): Promise<string | undefined> => {
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body,
        signal: AbortSignal.timeout(POST_TIMEOUT_MS),
      });
      await res.body?.cancel().catch(() => undefined);
      return res.ok ? undefined : `${new URL(url).host} answered ${res.status}`;
    } catch (err) {
      return `${new URL(url).host}: ${(err as Error).message}`;
    }
  };
  return {
    async notifyPark(notice: ParkNotice): Promise<NotifyParkResult> {
      const ctx = Context.current();
      const key = notificationKey(notice.executionId, notice.park);
      const before = (ctx.info.heartbeatDetails as NotifyHeartbeat | undefined)?.delivered ?? [];
      const urls = o.urls.map((url) => ({ url, digest: urlDigest(url) }));
      const delivered = new Set(urls.map((u) => u.digest).filter((d) => before.includes(d)));
      const body = JSON.stringify(messageFor(notice, callLink(o.publicUrl, notice)));
      const problems: string[] = [];
      await Promise.all(
        urls
          .filter((u) => !delivered.has(u.digest))
          .map(async ({ url, digest }) => {
            const problem = await post(url, body, key);
            if (problem) return void problems.push(problem);
            delivered.add(digest);
            ctx.heartbeat({ delivered: [...delivered] } satisfies NotifyHeartbeat);
            await faultPoint('notify.after_post', notice.tool, key);
          }),
      );
      const result = { by: o.replica, delivered: delivered.size, failed: o.urls.length - delivered.size };
      const verdict = attemptVerdict({ ...result, attempt: ctx.info.attempt, maxAttempts: NOTIFY_MAX_ATTEMPTS });
      if (problems.length) log(`notify: ${key} attempt ${ctx.info.attempt}: ${problems.join('; ')}`);
      if (verdict === 'complete') return result;
      throw ApplicationFailure.create({
        message: `${result.failed} of ${o.urls.length} URLs not delivered: ${problems.join('; ')}`,
        type: 'NotifyFailed',
        nonRetryable: verdict === 'give_up',
      });
    },
  };
}

/**
 * Starts the notifier: a worker with the notify activity only, polling `<task queue>-notify` for the
 * client's task queue, with the client's namespace, connection settings and data converter.
 */
export async function startNotifier(o: NotifierOptions): Promise<{ stop(): Promise<void> }> {
  const cfg = resolveConnectConfig(
    { address: o.client.address, namespace: o.client.namespace, taskQueue: o.client.taskQueue },
    o.client.settings,
  );
  const connection = await connectWorker(cfg);
  try {
    const worker = await Worker.create({
      connection,
      namespace: cfg.namespace,
      taskQueue: notifyTaskQueue(cfg.taskQueue),
      activities: notifyActivities(o),
      dataConverter: defaultDataConverter(o.client.settings),
      identity: `${o.replica}@${hostname()}:${process.pid}`,
      // A delivery's heartbeat reaches the server within this, so a crash right after re-sends little.
      maxHeartbeatThrottleInterval: '200ms',
      // Stopping lets a delivery in flight finish (a POST takes at most 5 s).
      shutdownGraceTime: '10s',
    });
    const log = o.log ?? ((line: string) => console.error(line));
    const running = worker.run().catch((err: Error) => log(`notifier stopped: ${err.message}`));
    return {
      stop: async () => {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await running.finally(() => connection.close());
      },
    };
  } catch (err) {
    await connection.close();
    throw err;
  }
}
