import type { OpenWorkerClient } from '../client/connection';
import { approveSignal, turnWorkflowId } from '../workflows/definitions';
import { DEFAULT_MAX_CACHED_WORKFLOWS } from '../worker/worker';
import { CALL, sleep, startTurn, within } from './durability';
import { eventMs, eventName } from './events';
import { killHard, rssMiB, startBenchWorker } from './procs';
import type { Spread } from './report';
import { spreadOf } from './report';

// Turns parked on approval: the worker's memory, and approve → dispatch for cached and evicted turns.

export interface ParkedRow {
  cache: string;
  parked: number;
  parkPerSec: number;
  rssMiB: number;
  approveToDispatchMs: Spread;
}

/**
 * Parks turns on approval (one protected call each) and measures the worker's RSS and, for a sample
 * approved one at a time, approve → dispatch: the approval signal's event to the start of the tool's
 * activity, both server timestamps. Large cache: every parked turn stays in the worker. Small
 * cache: a fresh worker parks more turns than it caches, and the sample comes from the evicted ones,
 * so each approval replays the turn from its history.
 */
export async function parkedTurns(c: OpenWorkerClient, quick: boolean): Promise<ParkedRow[]> {
  const taskQueue = 'bench-park';
  const sizes = quick ? [100, 300] : [1000, 10000];
  const largeCache = Math.ceil(sizes.at(-1)! * 1.2);
  const small = { cache: quick ? 20 : DEFAULT_MAX_CACHED_WORKFLOWS, park: quick ? 200 : 1000 };
  const samples = quick ? 5 : 20;
  const rows: ParkedRow[] = [];
  let seq = 0;
  let parkedTotal = 0;

  const park = async (count: number): Promise<{ ids: string[]; perSec: number }> => {
    const ids = Array.from({ length: count }, () => `park-${++seq}`);
    const t0 = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < ids.length) await startTurn(c, taskQueue, ids[next++]!, 'noop', false);
      }),
    );
    parkedTotal += count;
    const query = `TaskQueue="${taskQueue}" AND OpenWorkerState="awaiting_approval"`;
    const until = Date.now() + 30 * 60_000;
    while ((await c.client.workflow.count(query)).count < parkedTotal) {
      if (Date.now() > until) throw new Error(`bench: ${parkedTotal} turns did not park within 30 min`);
      await sleep(500);
    }
    return { ids, perSec: count / ((Date.now() - t0) / 1000) };
  };

  const approveSample = async (ids: string[]): Promise<Spread> => {
    const out: number[] = [];
    for (let i = 0; i < samples; i++) {
      const id = ids.splice(Math.floor((i * ids.length) / samples / 2), 1)[0]!; // spread over the older half
      const h = c.client.workflow.getHandle(turnWorkflowId(id, 1));
      await h.signal(approveSignal, { toolCallId: CALL, by: 'bench' });
      await within(h.result(), 120_000, `approved turn ${id}`);
      parkedTotal--;
      const evs = (await h.fetchHistory()).events ?? [];
      const signalled = evs.find((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'approve');
      // The dispatch marker is a heartbeat, not an event: the tool's attempt starting is the nearest one.
      const after = signalled ? evs.indexOf(signalled) : evs.length;
      const dispatched = evs.slice(after).find((e) => eventName(e) === 'ACTIVITY_TASK_STARTED');
      if (signalled && dispatched) out.push(eventMs(dispatched) - eventMs(signalled));
    }
    return spreadOf(out);
  };

  // Room for every parked turn in the heap, so the large cache measures memory, not an OOM.
  const large = await startBenchWorker({
    system: 'b3',
    taskQueue,
    maxCachedWorkflows: largeCache,
    env: { NODE_OPTIONS: '--max-old-space-size=12288' },
  });
  const parkedIds: string[] = [];
  try {
    rows.push({
      cache: `large (${largeCache})`,
      parked: 0,
      parkPerSec: NaN,
      rssMiB: rssMiB(large.pid),
      approveToDispatchMs: spreadOf([]),
    });
    for (const size of sizes) {
      const { ids, perSec } = await park(size - parkedIds.length);
      parkedIds.push(...ids);
      const rss = rssMiB(large.pid);
      rows.push({
        cache: `large (${largeCache})`,
        parked: parkedTotal,
        parkPerSec: perSec,
        rssMiB: rss,
        approveToDispatchMs: await approveSample(parkedIds),
      });
      console.log(`bench: parked ${parkedTotal}, worker RSS ${rss.toFixed(0)} MiB`);
    }
  } finally {
    // A graceful stop releases the worker's sticky queue, so later tasks go straight to the next worker.
    large.proc.kill('SIGTERM');
    await within(large.exited, 90_000, 'stopping the large-cache worker');
  }
  const smallWorker = await startBenchWorker({ system: 'b3', taskQueue, maxCachedWorkflows: small.cache });
  try {
    const { ids, perSec } = await park(small.park);
    const rss = rssMiB(smallWorker.pid);
    rows.push({
      cache: `small (${small.cache}${small.cache === DEFAULT_MAX_CACHED_WORKFLOWS ? ', the default' : ''})`,
      parked: parkedTotal,
      parkPerSec: perSec,
      rssMiB: rss,
      approveToDispatchMs: await approveSample(ids),
    });
  } finally {
    await killHard(smallWorker);
  }
  return rows;
}
