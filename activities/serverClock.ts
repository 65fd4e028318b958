import type { Context } from '@temporalio/activity';

/*
 * One clock for every safety decision: the Temporal server's.
 *
 *   server stamps ──────────────┐                       (the attempt was scheduled, was started)
 *   local monotonic elapsed ────┴──▶ now ≥ stamp + elapsed since a local instant after the stamp
 *
 * The times a decision compares (the idempotency window, the fences, leases) come from the server:
 * workflow time, or a time the server stamped on the activity task. An activity never compares its
 * host's wall clock with them: a host whose NTP is broken would see the wrong elapsed time. It takes
 * a server stamp known to lie in its past and adds what its own monotonic clock (performance.now())
 * measured since, which no skew or step of the wall clock moves. The result is a lower bound of the
 * server's now, short only by the task's delivery latency; the window check adds a margin for it.
 */

/** A server time, and a local monotonic instant (performance.now()) known to come after it. */
export interface ClockAnchor {
  serverMs: number;
  localMs: number;
  /** Which server stamp, for messages and tests. */
  source: string;
}

/** The server's now as the latest anchor tells it: a lower bound, never moved by the host's wall clock. */
export function serverNow(anchors: readonly ClockAnchor[], localNowMs: number): number {
  let now = -Infinity;
  for (const a of anchors) now = Math.max(now, a.serverMs + Math.max(0, localNowMs - a.localMs));
  return now;
}

/** What the delivery of a task may take beyond its stamp: the window check counts it as elapsed. */
export const LATENCY_MARGIN_MS = 1000;

export interface WindowFacts {
  /** When the call's first attempt was scheduled (workflow time: the server's clock). */
  firstMs: number;
  /** Now, on the same clock as `firstMs`. */
  nowMs: number;
  /** How long the external system keeps idempotency keys. */
  windowMs: number;
  marginMs?: number;
}

/** Why the external system may no longer remember the call's key, or undefined while it must. */
export function windowPassed({
  firstMs,
  nowMs,
  windowMs,
  marginMs = LATENCY_MARGIN_MS,
}: WindowFacts): string | undefined {
  const elapsed = nowMs - firstMs;
  if (elapsed + marginMs <= windowMs) return undefined;
  const s = (ms: number): string => `${Math.round(ms / 1000)}s`;
  return `the first attempt was ${s(elapsed)} ago by the Temporal server's clock, within ${s(marginMs)} of or beyond the ${s(windowMs)} the external system keeps idempotency keys`;
}

/** The server's now inside an activity (see the top of this file). */
export interface ActivityClock {
  now(): number;
  /**
   * Asks the server when it started this attempt, a later stamp than its scheduling: a worker that
   * polled late (workers down) must count that wait too. Undefined once known, else why not.
   */
  refine(): Promise<string | undefined>;
  /** The stamps used so far, latest last. */
  anchors(): readonly ClockAnchor[];
}

/** Call first thing in the activity, so the local instant is after every stamp of the task. */
export function activityClock(ctx: Context, local: () => number = () => performance.now()): ActivityClock {
  const { info } = ctx;
  const startedLocal = local();
  const anchors: ClockAnchor[] = [
    { serverMs: info.currentAttemptScheduledTimestampMs, localMs: startedLocal, source: 'attempt scheduled' },
  ];
  return {
    now: () => serverNow(anchors, local()),
    anchors: () => anchors,
    async refine() {
      if (anchors.some((a) => a.source === 'attempt started')) return undefined;
      let why = '';
      for (let i = 0; i < 2; i++) {
        if (i) await new Promise((r) => setTimeout(r, 200));
        try {
          anchors.push({ serverMs: await attemptStartedAt(ctx), localMs: startedLocal, source: 'attempt started' });
          return undefined;
        } catch (err) {
          why = (err as Error)?.message ?? String(err);
        }
      }
      return why;
    },
  };
}

/** When the server handed this attempt to a worker: its pending activity's `last_started_time`. */
async function attemptStartedAt(ctx: Context): Promise<number> {
  const { info } = ctx;
  if (info.isLocal || !info.workflowExecution) throw new Error('a local activity has no server start time');
  const signal = AbortSignal.any([ctx.cancellationSignal, AbortSignal.timeout(3000)]);
  const res = await ctx.client.withAbortSignal(signal, () =>
    ctx.client.workflowService.describeWorkflowExecution({
      namespace: info.namespace,
      execution: info.workflowExecution,
    }),
  );
  const mine = res.pendingActivities?.find((a) => a.activityId === info.activityId && a.attempt === info.attempt);
  const started = timestampMs(mine?.lastStartedTime);
  if (started === undefined) throw new Error(`no started attempt ${info.attempt} of ${info.activityId} on the server`);
  return started;
}

/** A protobuf Timestamp (seconds as a Long or a number) in ms. */
function timestampMs(
  ts: { seconds?: { toString(): string } | number | null; nanos?: number | null } | null | undefined,
) {
  if (ts?.seconds === undefined || ts.seconds === null) return undefined;
  const seconds = typeof ts.seconds === 'number' ? ts.seconds : Number(ts.seconds.toString());
  return seconds * 1000 + Math.floor((ts.nanos ?? 0) / 1e6);
}
