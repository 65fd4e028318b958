import { WorkflowNotFoundError } from '@temporalio/client';
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { OpenWorkerClient } from './connection';
import { OpenWorkerError } from './errors';

/**
 * Whether a worker polls the client's task queue, from the server's poller list. A poller that has
 * not been seen for `STALE_MS` is a dead worker (a live one re-polls at least every ~70 s).
 */
const STALE_MS = 2 * 60_000;
const CACHE_MS = 5_000;
const cache = new WeakMap<OpenWorkerClient, { at: number; live: number }>();

/** When each worker (by identity) last polled the task queue's workflow tasks, in ms on the server's clock. */
export type PollerTimes = ReadonlyMap<string, number>;

export async function pollerTimes(c: OpenWorkerClient): Promise<PollerTimes> {
  const res = await c.client.workflowService.describeTaskQueue({
    namespace: c.namespace,
    taskQueue: { name: c.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  return new Map(
    (res.pollers ?? []).map((p) => {
      const t = p.lastAccessTime;
      return [p.identity ?? '', t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : 0];
    }),
  );
}

const liveIn = (times: PollerTimes, now = Date.now()): number =>
  [...times.values()].filter((ms) => now - ms < STALE_MS).length;

export async function liveWorkers(c: OpenWorkerClient, opts: { fresh?: boolean } = {}): Promise<number> {
  const hit = cache.get(c);
  if (hit && !opts.fresh && Date.now() - hit.at < CACHE_MS) return hit.live;
  const live = liveIn(await pollerTimes(c));
  cache.set(c, { at: Date.now(), live });
  return live;
}

/**
 * Whether some worker polled between two readings. A worker that took a task (a query, a workflow
 * task) polls again at once; one that died never polls again, though the server lists it for
 * minutes, as fresh as a live worker in its minute-long poll.
 */
export function polledSince(before: PollerTimes, after: PollerTimes): boolean {
  for (const [identity, ms] of after) if (ms > (before.get(identity) ?? -Infinity)) return true;
  return false;
}

/** gRPC's status code (grpc-js is not a dependency of ours, only of the SDK's). */
const DEADLINE_EXCEEDED = 4;

/** Whether a query went unanswered (a deadline passed: nobody took it), rather than failed. */
export function unanswered(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if ((e as { code?: unknown }).code === DEADLINE_EXCEEDED) return true;
    if (/deadline|timed? ?out/i.test(e.message)) return true;
  }
  return false;
}

/** The one line that says no worker runs, and how to start one. */
export const noWorkerMessage = (c: OpenWorkerClient, address?: string): string =>
  `no worker is polling task queue '${c.taskQueue}'${address ? ` at ${address}` : ''} (namespace ${c.namespace}); start one with 'openworker-temporal worker --task-queue ${c.taskQueue}', or use the \`taskQueue\` your worker polls`;

/**
 * Sends the run's next workflow task and queries to the task queue every worker polls, not to the
 * queue of the worker that ran it last: the server holds them there for that worker's sticky timeout
 * (10 s), in vain when it died. A live worker that had the run cached replays its history once.
 */
export async function unstick(c: OpenWorkerClient, handle: WorkflowHandle): Promise<void> {
  await c.client.workflowService
    .resetStickyTaskQueue({ namespace: c.namespace, execution: { workflowId: handle.workflowId } })
    .catch(() => undefined); // a closed run has no sticky queue; the query says what else is wrong
}

/** A worker that polls answers a query within milliseconds (~30 ms here): after this long, ask whether one polls. */
const PROBE_MS = 1_250;
const UNANSWERED = Symbol('unanswered');

/**
 * Runs a query with a deadline, saying within a few seconds when no worker runs (one that just died
 * included), and waiting the settings' query timeout for a live worker that is slow.
 */
export async function queryWithDeadline<T>(
  c: OpenWorkerClient,
  what: string,
  handle: WorkflowHandle,
  ask: () => Promise<T>,
  deadlineMs?: number,
): Promise<T> {
  const budget = Math.min(c.settings.queryTimeoutMs, deadlineMs ?? Infinity);
  const end = Date.now() + budget;
  const attempt = (ms: number): Promise<T | typeof UNANSWERED> => {
    const deadline = Date.now() + Math.max(ms, 1);
    return c.client.withDeadline(deadline, ask).catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError) throw new OpenWorkerError(`${what}: not found`, 'not_found');
      // gRPC may end a call at its deadline as CANCELLED ("Call cancelled") rather than DEADLINE_EXCEEDED.
      if (unanswered(err) || Date.now() >= deadline) return UNANSWERED;
      throw err;
    });
  };
  const slow = () =>
    new OpenWorkerError(
      `${what}: no worker answered within ${budget / 1000}s; is 'openworker-temporal worker' running on task queue '${c.taskQueue}'?`,
      'no_worker',
    );
  const before = await pollerTimes(c).catch(() => undefined);
  if (!before) {
    const r = await attempt(budget); // the server's poller list unreadable: wait for a worker in full
    if (r === UNANSWERED) throw slow();
    return r;
  }
  let r = await attempt(Math.min(PROBE_MS, budget));
  if (r !== UNANSWERED) return r;
  const noWorker = () => new OpenWorkerError(`${what}: ${noWorkerMessage(c, c.address)}`, 'no_worker');
  const now = await pollerTimes(c).catch(() => before);
  if (!polledSince(before, now)) {
    if (liveIn(now) === 0) throw noWorker();
    // Listed, yet silent: dead, or a live worker that replaced it, the query held on the dead one's queue.
    await unstick(c, handle);
    r = await attempt(Math.min(PROBE_MS, end - Date.now()));
    if (r !== UNANSWERED) return r;
    if (!polledSince(before, await pollerTimes(c).catch(() => before))) throw noWorker();
  }
  // A worker took the query and is slow: wait for it the rest of the budget.
  r = await attempt(end - Date.now());
  if (r === UNANSWERED) throw slow();
  return r;
}
