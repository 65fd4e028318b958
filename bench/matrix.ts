import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRegistry } from '../activities/registry';
import type { OpenWorkerClient } from '../client/connection';
import { OpenWorkerSession, OpenWorkerState, approveSignal, decisionsSignal } from '../workflows/definitions';
import { approveSignal as b1ApproveSignal } from './idiomaticWorkflow';
import { runTurnInProcess } from './loop';
import type { System, Workload } from './config';
import { B0, B2, CONFIG, isRead, shapeFor, systemsFor } from './config';
import type { BenchPayloadStore } from './payloadStore';
import { perTurn } from './payloadStore';
import { scrapeHistograms } from './procs';
import type { RunResult } from './report';
import { benchMessage, benchModel, benchTools, protectedCalls } from './workload';
import type { TurnShape } from './workload';

// The closed-loop matrix: every workload × N × system, interleaved round by round, on one server.

export const WFT_METRICS = [
  'temporal_workflow_task_execution_latency',
  'temporal_workflow_task_schedule_to_start_latency',
  'temporal_workflow_task_replay_latency',
  'temporal_activity_execution_latency',
] as const;

export type Histograms = Record<string, Record<string, { sum: number; count: number }>>;

/** The Temporal workers under test: their process and Prometheus port, by system family. */
export type Workers = Record<'b1' | 'b2' | 'b3', { pid: number; metricsPort: number }>;

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim() || 100);
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS; // utime, stime
}

const familyOf = (s: System): keyof Workers | undefined =>
  s === B0 ? undefined : s === B2 ? 'b2' : s.startsWith('B1') ? 'b1' : 'b3';

/** Long-polls a turn's history until its `n`-th model activity (`callModel` in B1 and B3) is scheduled. */
async function modelCallScheduled(c: OpenWorkerClient, workflowId: string, n: number): Promise<void> {
  let seen = 0;
  let nextPageToken: Uint8Array | undefined;
  for (;;) {
    const r = await c.client.workflowService.getWorkflowExecutionHistory({
      namespace: c.namespace,
      execution: { workflowId },
      waitNewEvent: true,
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    for (const e of r.history?.events ?? [])
      if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel' && ++seen === n) return;
    if (!r.nextPageToken?.length) throw new Error(`bench: ${workflowId} closed before its model call ${n}`);
    nextPageToken = r.nextPageToken;
  }
}

export interface MatrixResult {
  runs: RunResult[];
  /** Workflow IDs of the N=1 turns, by `system|k|tool`, for the history measurements (B1 and B3, no model latency). */
  samples: Map<string, string[]>;
  /** What the SDK's histograms gained in each worker over the matrix. */
  workerTasks: Histograms;
}

/**
 * One B1 or B3 turn of `shape`, started and approved as the automatic approver does: one signal per
 * model response with protected calls, naming them all (B3: `approve`, or `decisions` for several;
 * B1: its `approve`), sent while the model produces that response: at once for the first, and for a
 * later one when its model call is scheduled (B3 holds a decision for a call the pending response
 * may create, not one further ahead). Resolves when the turn has ended.
 */
export async function temporalTurn(
  c: OpenWorkerClient,
  family: 'b1' | 'b3',
  id: string,
  shape: TurnShape,
  approving = true,
): Promise<void> {
  const message = benchMessage(shape);
  const approvals = approving ? protectedCalls(shape) : [];
  const b1 = family === 'b1';
  const handle = b1
    ? await c.client.workflow.start('idiomaticTurn', { taskQueue: 'bench-b1', workflowId: id, args: [message] })
    : await c.client.workflow.start('agentTurn', {
        taskQueue: 'bench-b3',
        workflowId: id,
        args: [{ sessionId: id, turn: 1, history: [], message }],
        // As a session (startAgentTurn) starts its turns: the state is set at the start, not upserted.
        typedSearchAttributes: [
          { key: OpenWorkerSession, value: id },
          { key: OpenWorkerState, value: 'running' },
        ],
      });
  const approve = async (ids: string[]): Promise<void> => {
    if (b1) await handle.signal(b1ApproveSignal, { toolCallIds: ids, approved: true });
    else if (ids.length === 1) await handle.signal(approveSignal, { toolCallId: ids[0]!, by: 'bench' });
    else
      await handle.signal(decisionsSignal, {
        decisions: ids.map((toolCallId) => ({ kind: 'approve' as const, toolCallId, by: 'bench' })),
      });
  };
  await Promise.all([
    handle.result(),
    ...approvals.map(async ({ response, ids }) => {
      if (response > 0) await modelCallScheduled(c, id, response + 1);
      await approve(ids);
    }),
  ]);
}

/** The payload store, measured around each run: its counters and its process, if it has one. */
export type MeasuredStore = Pick<BenchPayloadStore, 'counts' | 'pid'>;

export async function runMatrix(
  c: OpenWorkerClient,
  serverPid: number,
  workers: Workers,
  store?: MeasuredStore,
): Promise<MatrixResult> {
  const model = benchModel();
  const registry = createRegistry(benchTools);
  let seq = 0;
  const turn = async (system: System, w: Workload): Promise<string | undefined> => {
    const id = `bench-${++seq}`;
    const shape = shapeFor(system, w);
    const message = benchMessage(shape);
    if (system === B0) return void (await runTurnInProcess(model, registry, message));
    if (system === B2)
      return void (await c.client.workflow.execute('naiveTurn', {
        taskQueue: 'bench-b2',
        workflowId: id,
        args: [message],
      }));
    await temporalTurn(c, familyOf(system) === 'b1' ? 'b1' : 'b3', id, shape, !isRead(system));
    return id;
  };

  const scrape = async (): Promise<Histograms> =>
    Object.fromEntries(
      await Promise.all(
        Object.entries(workers).map(async ([w, { metricsPort }]) => [
          w,
          await scrapeHistograms(metricsPort, WFT_METRICS),
        ]),
      ),
    ) as Histograms;
  const before = await scrape();
  // Warm up every path (bundles, caches, connections) before measuring; a slow model adds nothing to warm.
  const warm = CONFIG.workloads.filter((w) => w.latencyMs === 0);
  for (const w of warm.length ? warm : [{ ...CONFIG.workloads[0]!, latencyMs: 0 }])
    for (const s of systemsFor(w)) await turn(s, w);

  const runs: RunResult[] = [];
  const samples = new Map<string, string[]>();
  const total = CONFIG.rounds * CONFIG.workloads.reduce((a, w) => a + w.ns.length, 0);
  let done = 0;
  for (let round = 1; round <= CONFIG.rounds; round++) {
    for (const w of CONFIG.workloads) {
      for (const n of w.ns) {
        for (const system of systemsFor(w)) {
          const family = familyOf(system);
          const wpid = family ? workers[family].pid : undefined;
          const store0 = await store?.counts();
          const cpu0 = {
            server: cpuMs(serverPid),
            worker: wpid ? cpuMs(wpid) : 0,
            driver: cpuMs(process.pid),
            store: store?.pid ? cpuMs(store.pid) : 0,
          };
          const latencies: number[] = [];
          const ids: string[] = [];
          const t0 = Date.now();
          const deadline = t0 + CONFIG.seconds * 1000;
          let started = 0;
          await Promise.all(
            Array.from({ length: n }, async () => {
              while (Date.now() < deadline || started < w.minTurns) {
                started++;
                const s = performance.now();
                const id = await turn(system, w);
                latencies.push(performance.now() - s);
                if (id) ids.push(id);
              }
            }),
          );
          const seconds = (Date.now() - t0) / 1000;
          const turns = latencies.length;
          const cpuPerTurn = {
            server: (cpuMs(serverPid) - cpu0.server) / turns,
            ...(wpid ? { worker: (cpuMs(wpid) - cpu0.worker) / turns } : {}),
            driver: (cpuMs(process.pid) - cpu0.driver) / turns,
            ...(store?.pid ? { store: (cpuMs(store.pid) - cpu0.store) / turns } : {}),
          };
          const storePerTurn = store0 && perTurn(store0, await store!.counts(), turns);
          const { k, tool, latencyMs } = w;
          const measured = { turns, seconds, latencies, cpuPerTurn, ...(storePerTurn ? { storePerTurn } : {}) };
          runs.push({ system, k, tool, latencyMs, n, round, ...measured });
          const key = `${system}|${k}|${tool}`;
          if (n === 1 && latencyMs === 0 && family && family !== 'b2')
            samples.set(key, [...(samples.get(key) ?? []), ...ids]);
        }
        console.log(`bench: ${++done}/${total} k=${w.k} ${w.tool} model ${w.latencyMs} ms N=${n} round ${round}`);
      }
    }
  }

  const after = await scrape();
  const workerTasks = Object.fromEntries(
    Object.keys(workers).map((w) => [
      w,
      Object.fromEntries(
        WFT_METRICS.map((m) => [
          m,
          { sum: after[w]![m]!.sum - before[w]![m]!.sum, count: after[w]![m]!.count - before[w]![m]!.count },
        ]),
      ),
    ]),
  );
  return { runs, samples, workerTasks };
}
