import { readFileSync } from 'node:fs';
import type { WorkflowHandle } from '@temporalio/client';
import type { OpenWorkerClient } from '../client/connection';
import { approveSignal, turnWorkflowId } from '../workflows/definitions';
import type { HistoryEvent } from './events';
import { upsertedState } from './events';
import type { BenchTool } from './workload';
import { benchMessage, callIdsFor, calls } from './workload';

// What the durability measurements share (parked.ts, crash.ts, scaleOut.ts): turns parked on
// approval (memory, approve → dispatch), a worker SIGKILLed mid-tool (time to recovery_required),
// and scale-out with a worker lost under load. Every kill happens at a point the worker reports
// (`OPENWORKER_FAULT tool.after_execute <id>`): the tool's effect is recorded and the activity has
// not completed.

/** The one call of a durability turn. */
export const CALL = callIdsFor(0, 1)[0]!;
export const AFTER_EXECUTE = 'tool.after_execute';
/** The fault point a victim worker is armed with: right after the `effect` tool's effect. */
export const ARMED = `${AFTER_EXECUTE}@effect`;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`bench: ${what} took over ${ms / 1000} s`)), ms)),
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Starts a one-call turn of ours, approved at once or left to park. */
export async function startTurn(
  c: OpenWorkerClient,
  taskQueue: string,
  sessionId: string,
  tool: BenchTool,
  approve: boolean,
): Promise<WorkflowHandle> {
  const h = await c.client.workflow.start('agentTurn', {
    taskQueue,
    workflowId: turnWorkflowId(sessionId, 1),
    args: [{ sessionId, turn: 1, history: [], message: benchMessage({ steps: calls(1, tool), latencyMs: 0 }) }],
  });
  if (approve) await h.signal(approveSignal, { toolCallId: CALL, by: 'bench' });
  return h;
}

/** Polls a turn's history (server timestamps carry the timing, so the polling rate does not). */
export async function waitForEvents(
  h: WorkflowHandle,
  done: (evs: HistoryEvent[]) => boolean,
  ms: number,
): Promise<HistoryEvent[]> {
  const until = Date.now() + ms;
  for (;;) {
    const evs = (await h.fetchHistory()).events ?? [];
    if (done(evs)) return evs;
    if (Date.now() > until)
      throw new Error(`bench: ${h.workflowId} did not reach the expected event within ${ms / 1000} s`);
    await sleep(100);
  }
}

/** The upsert of recovery_required, if the turn parked there. */
export const parkedIn = (evs: HistoryEvent[]): HistoryEvent | undefined =>
  evs.find((e) => upsertedState(e) === 'recovery_required');

/** Execution IDs the effect log holds more than once. */
export function duplicateEffects(file: string): number {
  const counts = new Map<string, number>();
  for (const id of readFileSync(file, 'utf8').split('\n').filter(Boolean)) counts.set(id, (counts.get(id) ?? 0) + 1);
  return [...counts.values()].filter((n) => n > 1).length;
}
