import { readFileSync, writeFileSync } from 'node:fs';
import type { OpenWorkerClient } from '../client/connection';
import { recover } from '../client/decisions';
import { AFTER_EXECUTE, ARMED, CALL, duplicateEffects, parkedIn, startTurn, waitForEvents, within } from './durability';
import { eventMs, eventName } from './events';
import type { WorkerSpec } from './procs';
import { killHard, startBenchWorker } from './procs';
import type { Spread } from './report';
import { spreadOf } from './report';

// A worker SIGKILLed mid-tool: how long until the turn records recovery_required.

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
