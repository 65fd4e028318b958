import { readFileSync, writeFileSync } from 'node:fs';
import type { OpenWorkerClient } from '../client/connection';
import { recover } from '../client/decisions';
import { executionIdFor } from '../workflows/identity';
import { parseWorkflowId } from '../workflows/ids';
import { AFTER_EXECUTE, ARMED, CALL, duplicateEffects, parkedIn, sleep, startTurn, within } from './durability';
import { eventMs } from './events';
import type { BenchWorker } from './procs';
import { killHard, startBenchWorker } from './procs';
import type { Spread } from './report';
import { maxOf, percentile, spreadOf } from './report';

// Scale-out with a worker lost under load: throughput before and after, stalled turns, duplicates.

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
          const sessionId = parseWorkflowId(wf.workflowId)!.sessionId;
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
