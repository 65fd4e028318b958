import { temporal } from '@temporalio/proto';
import type { OpenWorkerClient } from './connection';

/**
 * Whether a worker polls the client's task queue, from the server's poller list. A poller that has
 * not been seen for `STALE_MS` is a dead worker (a live one re-polls at least every ~70 s).
 */
const STALE_MS = 2 * 60_000;
const CACHE_MS = 5_000;
const cache = new WeakMap<OpenWorkerClient, { at: number; live: number }>();

export async function liveWorkers(c: OpenWorkerClient, opts: { fresh?: boolean } = {}): Promise<number> {
  const hit = cache.get(c);
  if (hit && !opts.fresh && Date.now() - hit.at < CACHE_MS) return hit.live;
  const res = await c.client.workflowService.describeTaskQueue({
    namespace: c.namespace,
    taskQueue: { name: c.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  const now = Date.now();
  const live = (res.pollers ?? []).filter((p) => {
    const t = p.lastAccessTime;
    const ms = t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : 0;
    return now - ms < STALE_MS;
  }).length;
  cache.set(c, { at: now, live });
  return live;
}

/** The one line that says no worker runs, and how to start one. */
export const noWorkerMessage = (c: OpenWorkerClient, address?: string): string =>
  `no worker is polling task queue '${c.taskQueue}'${address ? ` at ${address}` : ''} (namespace ${c.namespace}); start one with 'openworker-temporal worker --task-queue ${c.taskQueue}', or use the \`taskQueue\` your worker polls`;
