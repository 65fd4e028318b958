import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  TimeoutFailure,
  defineSignal,
  isCancellation,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';

// The workflow of the heartbeat probe (test/heartbeatMarker.test.ts): one activity with the given
// timeouts and attempts, and what the workflow learned from it, as data the test can assert on.

export type ProbeMode = 'mark-then-hang' | 'mark-then-late' | 'beat-until-cancelled' | 'finish-after-cancel';

export interface ProbeOptions {
  mode: ProbeMode;
  startToCloseTimeout: string;
  heartbeatTimeout?: string;
  maximumAttempts: number;
}

export type ProbeResult =
  | { kind: 'completed'; value: unknown }
  | { kind: 'timeout'; timeoutType: string | undefined; lastHeartbeatDetails: unknown }
  | { kind: 'failed'; type: string | undefined; message: string }
  | { kind: 'cancelled' };

export const cancelProbe = defineSignal('cancelProbe');

export async function heartbeatProbe(o: ProbeOptions): Promise<ProbeResult> {
  const { probe } = proxyActivities<{ probe(mode: ProbeMode): Promise<unknown> }>({
    startToCloseTimeout: o.startToCloseTimeout,
    ...(o.heartbeatTimeout ? { heartbeatTimeout: o.heartbeatTimeout } : {}),
    retry: { maximumAttempts: o.maximumAttempts, initialInterval: '100ms' },
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  });
  const scope = new CancellationScope();
  setHandler(cancelProbe, () => scope.cancel());
  try {
    return { kind: 'completed', value: await scope.run(() => probe(o.mode)) };
  } catch (err) {
    if (isCancellation(err)) return { kind: 'cancelled' };
    const cause = err instanceof ActivityFailure ? err.cause : undefined;
    if (cause instanceof TimeoutFailure)
      return { kind: 'timeout', timeoutType: cause.timeoutType, lastHeartbeatDetails: cause.lastHeartbeatDetails };
    if (cause instanceof ApplicationFailure)
      return { kind: 'failed', type: cause.type ?? undefined, message: cause.message };
    throw err;
  }
}
