import {
  condition,
  defineSignal,
  executeChild,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { OpenWorkerState } from '../workflows/definitions';

// The primitives `npm run bench:breakdown` prices: each workflow does `n` of one thing and nothing
// else, so (server CPU at n) − (at 0), divided by n, is what one of them costs the server.

export interface PrimitiveActivities {
  noop(): Promise<number>;
  /** `n` heartbeats, each awaited at the server (what a protected call's dispatch marker is). */
  heartbeats(n: number): Promise<number>;
}

const { noop, heartbeats } = proxyActivities<PrimitiveActivities>({ startToCloseTimeout: '10s' });

export const tick = defineSignal('tick');

/** A workflow that returns at once: its start, one workflow task and its completion. */
export async function primBare(): Promise<number> {
  return 0;
}

/** `n` state search attribute upserts in one workflow task. */
export async function primUpserts(n: number): Promise<number> {
  for (let i = 0; i < n; i++) upsertSearchAttributes([{ key: OpenWorkerState, value: i % 2 ? 'running' : 'idle' }]);
  return n;
}

/** `n` patches asked in one workflow task: a marker and a TemporalChangeVersion upsert each. */
export async function primPatches(n: number): Promise<number> {
  let applied = 0;
  for (let i = 0; i < n; i++) if (patched(`bench-${i}`)) applied++;
  return applied;
}

/** `n` activities one after the other: each one, and the workflow task its result wakes. */
export async function primActivities(n: number): Promise<number> {
  for (let i = 0; i < n; i++) await noop();
  return n;
}

/** `n` activities at once: their results share workflow tasks (how a task's price comes apart from an activity's). */
export async function primParallel(n: number): Promise<number> {
  await Promise.all(Array.from({ length: n }, () => noop()));
  return n;
}

/** One activity that sends `n` awaited heartbeats (priced against one activity with none). */
export async function primHeartbeats(n: number): Promise<number> {
  return heartbeats(n);
}

/** Waits for `n` signals; the driver sends each after the last one's workflow task completed. */
export async function primSignals(n: number): Promise<number> {
  let seen = 0;
  setHandler(tick, () => void seen++);
  await condition(() => seen >= n);
  return seen;
}

/** `n` child workflows one after the other (a session hands each turn to a child). */
export async function primChildren(n: number): Promise<number> {
  for (let i = 0; i < n; i++) await executeChild(primBare, { workflowId: `${workflowInfo().workflowId}-child-${i}` });
  return n;
}
