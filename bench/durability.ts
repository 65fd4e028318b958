import { readFileSync, writeFileSync } from 'node:fs';
import type { WorkflowHandle } from '@temporalio/client';
import type { OpenWorkerClient } from '../client/connection';
import { recover } from '../client/decisions';
import { approveSignal, turnWorkflowId } from '../workflows/definitions';
import { DEFAULT_MAX_CACHED_WORKFLOWS } from '../worker/worker';
import { executionIdFor } from '../workflows/identity';
import type { HistoryEvent } from './events';
import { eventMs, eventName, upsertedState } from './events';
import type { BenchWorker, WorkerSpec } from './procs';
import { killHard, rssMiB, startBenchWorker } from './procs';
import type { Spread } from './report';
import { maxOf, percentile, spreadOf } from './report';
import type { BenchTool } from './workload';
import { benchMessage, callIdsFor } from './workload';

// Metrics 4–6 of the benchmark: turns parked on approval (memory, approve → dispatch), a worker
// SIGKILLed mid-tool (time to recovery_required), and scale-out with a worker lost under load.
// Every kill happens at a point the worker reports (`OPENWORKER_FAULT tool.after_execute <id>`):
// the tool's effect is recorded and the activity has not completed.

const CALL = callIdsFor(0, 1)[0]!;
const AFTER_EXECUTE = 'tool.after_execute';
const ARMED = `${AFTER_EXECUTE}@effect`;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
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

async function startTurn(
  c: OpenWorkerClient,
  taskQueue: string,
  sessionId: string,
  tool: BenchTool,
  approve: boolean,
): Promise<WorkflowHandle> {
  const h = await c.client.workflow.start('agentTurn', {
    taskQueue,
    workflowId: turnWorkflowId(sessionId, 1),
    args: [{ sessionId, turn: 1, history: [], message: benchMessage(1, tool) }],
  });
  if (approve) await h.signal(approveSignal, { toolCallId: CALL, by: 'bench' });
  return h;
}

/** Polls a turn's history (server timestamps carry the timing, so the polling rate does not). */
async function waitForEvents(
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

const parkedIn = (evs: HistoryEvent[]): HistoryEvent | undefined =>
  evs.find((e) => upsertedState(e) === 'recovery_required');

/** Execution IDs the effect log holds more than once. */
export function duplicateEffects(file: string): number {
  const counts = new Map<string, number>();
  for (const id of readFileSync(file, 'utf8').split('\n').filter(Boolean)) counts.set(id, (counts.get(id) ?? 0) + 1);
  return [...counts.values()].filter((n) => n > 1).length;
}

// ---- 4. Turns parked on approval ---------------------------------------------------------------

export interface ParkedRow {
  cache: string;
  parked: number;
  parkPerSec: number;
  rssMiB: number;
  approveToDispatchMs: Spread;
}

/**
 * Parks turns on approval (one protected call each) and measures the worker's RSS and, for a sample
 * approved one at a time, approve → dispatch: the approval signal's event to the dispatch update's
 * acceptance, both server timestamps. Large cache: every parked turn stays in the worker. Small
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
      const dispatched = evs.find((e) => eventName(e) === 'WORKFLOW_EXECUTION_UPDATE_ACCEPTED');
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

// ---- 5. SIGKILL mid-tool → recovery_required ---------------------------------------------------

export interface CrashRow {
  /** Kill → the upsert of recovery_required (workflow task completion time). */
  toRecoveryMs: number;
  /** Kill → ActivityTaskTimedOut (the heartbeat timeout noticing). */
  detectMs: number;
  /** The activity's timeout → the workflow task that handled it being scheduled where a live worker takes it. */
  stickyWaitMs: number;
  viaDeadSticky: boolean;
}

export interface CrashResult {
  heartbeatTimeoutMs: number;
  kills: CrashRow[];
  toRecoveryMs: Spread;
  viaDeadSticky: Spread;
  viaLiveWorker: Spread;
  turnsRunElsewhere: number;
  duplicates: number;
  effects: number;
}

/**
 * Two workers on a queue; one (the victim) is armed to stop right after the tool's effect. A turn
 * whose call lands there is SIGKILLed at that instant; the time until the turn records
 * recovery_required is taken from server timestamps against the kill time. An operator then
 * confirms the effect (`recover … succeeded`), and the victim is restarted for the next kill.
 */
export async function crashToRecovery(c: OpenWorkerClient, kills: number, effectsFile: string): Promise<CrashResult> {
  const taskQueue = 'bench-crash';
  writeFileSync(effectsFile, '');
  const spec: WorkerSpec = { system: 'b3', taskQueue, env: { BENCH_EFFECTS: effectsFile, OPENWORKER_FAULTS: ARMED } };
  const standby = await startBenchWorker({ system: 'b3', taskQueue, env: { BENCH_EFFECTS: effectsFile } });
  let victim = await startBenchWorker(spec);
  const rows: CrashRow[] = [];
  let elsewhere = 0;
  let seq = 0;
  // One wait per victim process: a call that ran on the standby leaves it pending for the next turn.
  let fault = victim.nextFault(AFTER_EXECUTE);
  try {
    while (rows.length < kills) {
      if (seq > kills * 10) throw new Error('bench: calls keep missing the armed worker');
      const sessionId = `crash-${++seq}`;
      const h = await startTurn(c, taskQueue, sessionId, 'effect', true);
      const hit = await within(
        Promise.race([fault.then((id) => id), h.result().then(() => undefined)]),
        60_000,
        `crash turn ${sessionId}`,
      );
      if (hit === undefined) {
        elsewhere++;
        continue;
      }
      const killedAt = Date.now();
      const dead = victim;
      await killHard(dead);
      const respawn = startBenchWorker(spec);
      const evs = await waitForEvents(h, (e) => parkedIn(e) !== undefined, 60_000);
      const parked = parkedIn(evs)!;
      const timedOut = evs.find((e) => eventName(e) === 'ACTIVITY_TASK_TIMED_OUT')!;
      const completed = evs.find(
        (e) =>
          e.eventId?.toString() ===
          parked.upsertWorkflowSearchAttributesEventAttributes!.workflowTaskCompletedEventId?.toString(),
      )!;
      const scheduled = evs.find(
        (e) => e.eventId?.toString() === completed.workflowTaskCompletedEventAttributes!.scheduledEventId?.toString(),
      )!;
      // A task sent to the dead worker's sticky queue times out (schedule-to-start) before another worker gets it.
      const viaDeadSticky = evs.some(
        (e) => eventName(e) === 'WORKFLOW_TASK_TIMED_OUT' && Number(e.eventId) > Number(timedOut.eventId),
      );
      rows.push({
        toRecoveryMs: eventMs(parked) - killedAt,
        detectMs: eventMs(timedOut) - killedAt,
        stickyWaitMs: eventMs(scheduled) - eventMs(timedOut),
        viaDeadSticky,
      });
      await recover(c, {
        sessionId,
        turn: 1,
        toolCallId: CALL,
        decision: 'succeeded',
        result: { ok: 0 },
        by: 'bench-operator',
        reason: 'the effect log has it',
      });
      await within(h.result(), 60_000, `recovered turn ${sessionId}`);
      victim = await respawn;
      fault = victim.nextFault(AFTER_EXECUTE);
      console.log(`bench: kill ${rows.length}/${kills}: recovery_required after ${rows.at(-1)!.toRecoveryMs} ms`);
    }
  } finally {
    await killHard(victim);
    await killHard(standby);
  }
  const effects = readFileSync(effectsFile, 'utf8').split('\n').filter(Boolean).length;
  return {
    heartbeatTimeoutMs: 2000,
    kills: rows,
    toRecoveryMs: spreadOf(rows.map((r) => r.toRecoveryMs)),
    viaDeadSticky: spreadOf(rows.filter((r) => r.viaDeadSticky).map((r) => r.toRecoveryMs)),
    viaLiveWorker: spreadOf(rows.filter((r) => !r.viaDeadSticky).map((r) => r.toRecoveryMs)),
    turnsRunElsewhere: elsewhere,
    duplicates: duplicateEffects(effectsFile),
    effects,
  };
}

// ---- 6. Scale-out with a worker lost under load ------------------------------------------------

export interface ScaleOutResult {
  workers: number;
  sessions: number;
  seconds: number;
  turnsPerSecBefore: number;
  turnsPerSecAfter: number;
  /** Turns in flight at the kill that took over 3× the pre-kill p99 (min 1 s), the parked ones aside. */
  stalled: { count: number; maxMs: number; p50Ms: number };
  /** The call that was mid-tool on the killed worker: kill → recovery_required. */
  killedCall: { toRecoveryMs: number };
  /** Every turn the kill left in recovery_required (its call was on the killed worker), and whether its effect had happened. */
  parkedByKill: { sessionId: string; toRecoveryMs: number; effectApplied: boolean }[];
  latencyBeforeMs: Spread;
  duplicates: number;
  effects: number;
}

/**
 * N sessions in a closed loop (one signal-approved `effect` call per turn) over `workers` workers on
 * one queue. Halfway through, one worker is armed; at the next call it reports mid-tool it is
 * SIGKILLed. Throughput is counted before the kill and from the kill to the end; an operator confirms
 * the call the kill interrupted, as in the crash measurement.
 */
export async function scaleOut(
  c: OpenWorkerClient,
  opts: { workers: number; sessions: number; seconds: number; effectsFile: string },
): Promise<ScaleOutResult> {
  const taskQueue = `bench-scale-${opts.workers}`;
  writeFileSync(opts.effectsFile, '');
  const env = { BENCH_EFFECTS: opts.effectsFile, BENCH_ARM_ON_USR2: ARMED };
  const workers: BenchWorker[] = [];
  for (let i = 0; i < opts.workers; i++) workers.push(await startBenchWorker({ system: 'b3', taskQueue, env }));
  const victim = workers[0]!;
  const bySession = new Map<string, string>();
  let seq = 0;
  const turn = async (): Promise<string> => {
    const sessionId = `scale-${opts.workers}-${++seq}`;
    bySession.set(executionIdFor(sessionId, 1, CALL), sessionId);
    await within(
      (await startTurn(c, taskQueue, sessionId, 'effect', true)).result(),
      120_000,
      `scale-out turn ${sessionId}`,
    );
    return sessionId;
  };
  try {
    for (let i = 0; i < opts.sessions; i++) await turn(); // warm every worker's bundle and connections
    const done: { start: number; end: number; sessionId: string }[] = [];
    const t0 = Date.now();
    const deadline = t0 + opts.seconds * 1000;
    let killedAt = NaN;
    let loopDone = false;
    const parkedByKill: { sessionId: string; toRecoveryMs: number; effectApplied: boolean }[] = [];
    // The operator: after the kill, every turn that parks in recovery_required is checked against
    // the effect log, as a human would check the external system: applied → succeeded, else retry
    // at once (without skipFence the retry waits out the tool's 2-minute window and the turn times out).
    const operator = (async () => {
      await sleep((opts.seconds * 1000) / 2);
      const fault = victim.nextFault(AFTER_EXECUTE);
      victim.proc.kill('SIGUSR2');
      const executionId = await fault;
      killedAt = Date.now();
      await killHard(victim);
      const resolved = new Set<string>();
      const query = `TaskQueue="${taskQueue}" AND OpenWorkerState="recovery_required"`;
      while (!loopDone) {
        for await (const wf of c.client.workflow.list({ query })) {
          if (resolved.has(wf.workflowId)) continue;
          resolved.add(wf.workflowId);
          const sessionId = /^session-(.+)-turn-1$/.exec(wf.workflowId)![1]!;
          const h = c.client.workflow.getHandle(wf.workflowId);
          const evs = (await h.fetchHistory()).events ?? [];
          const applied = readFileSync(opts.effectsFile, 'utf8')
            .split('\n')
            .includes(executionIdFor(sessionId, 1, CALL));
          parkedByKill.push({
            sessionId,
            toRecoveryMs: eventMs(parkedIn(evs) ?? evs.at(-1)!) - killedAt,
            effectApplied: applied,
          });
          await recover(c, {
            sessionId,
            turn: 1,
            toolCallId: CALL,
            by: 'bench-operator',
            // The call was on the killed worker, so no attempt can still run: the retry skips the fence.
            ...(applied
              ? { decision: 'succeeded' as const, result: { ok: 0 }, reason: 'the effect log has it' }
              : { decision: 'retry' as const, skipFence: true, reason: 'the effect log does not have it' }),
          });
        }
        await sleep(250);
      }
      return bySession.get(executionId)!;
    })();
    operator.catch(() => undefined); // awaited below; a failure must not go unhandled meanwhile
    await Promise.all(
      Array.from({ length: opts.sessions }, async () => {
        while (Date.now() < deadline) {
          const start = Date.now();
          const sessionId = await turn();
          done.push({ start, end: Date.now(), sessionId });
        }
      }),
    );
    loopDone = true;
    const killedSession = await within(operator, 120_000, 'the scale-out kill');
    const killed = parkedByKill.find((p) => p.sessionId === killedSession);
    const before = done.filter((d) => d.end < killedAt);
    const after = done.filter((d) => d.end >= killedAt && d.end <= deadline);
    const p99 = percentile(
      before.map((d) => d.end - d.start),
      99,
    );
    const stalled = done
      .filter(
        (d) =>
          !parkedByKill.some((p) => p.sessionId === d.sessionId) &&
          d.start < killedAt &&
          d.end > killedAt &&
          d.end - d.start > Math.max(1000, 3 * p99),
      )
      .map((d) => d.end - d.start);
    const effects = readFileSync(opts.effectsFile, 'utf8').split('\n').filter(Boolean).length;
    return {
      workers: opts.workers,
      sessions: opts.sessions,
      seconds: opts.seconds,
      turnsPerSecBefore: before.length / ((killedAt - t0) / 1000),
      turnsPerSecAfter: after.length / ((deadline - killedAt) / 1000),
      stalled: {
        count: stalled.length,
        maxMs: stalled.length ? maxOf(stalled) : 0,
        p50Ms: stalled.length ? percentile(stalled, 50) : 0,
      },
      killedCall: { toRecoveryMs: killed?.toRecoveryMs ?? NaN },
      parkedByKill,
      latencyBeforeMs: spreadOf(before.map((d) => d.end - d.start)),
      duplicates: duplicateEffects(opts.effectsFile),
      effects,
    };
  } finally {
    for (const w of workers) await killHard(w);
  }
}
