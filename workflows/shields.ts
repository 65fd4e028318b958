import { CancellationScope } from '@temporalio/workflow';

/**
 * Lets tool activities with external effects outlive their turn's cancel request, so an attempt
 * that may be talking to the outside world finishes, or times out into recovery_required, instead
 * of being abandoned mid-effect. `lettingCallsFinish()` is true once the turn was asked to cancel.
 */
export function createShields() {
  const root = CancellationScope.current();
  // A scope whose parent is non-cancellable does not hear the turn's cancellation (SDK ≥ 1.11),
  // but can still be cancelled on its own.
  const detached = new CancellationScope({ cancellable: false });
  const open = new Set<CancellationScope>();
  // Activities that decide themselves: asked to stop, they give up before their dispatch marker and
  // finish after it (the heartbeat marker; their cancellation type waits for that answer).
  const askToStop = new Set<CancellationScope>();
  let letFinish = false;
  root.cancelRequested.catch(() => {
    letFinish = true;
    for (const scope of open) if (askToStop.has(scope)) scope.cancel();
  });
  return {
    /** Runs `fn` (which schedules one activity) shielded from the turn's cancellation. */
    async run<T>(fn: () => Promise<T>, opts: { askToStop?: boolean } = {}): Promise<T> {
      // Once cancelled, scheduling fails at once, as it always did.
      if (root.consideredCancelled) return fn();
      const scope = new CancellationScope({ cancellable: true, parent: detached });
      open.add(scope);
      if (opts.askToStop) askToStop.add(scope);
      try {
        return await scope.run(fn);
      } finally {
        open.delete(scope);
        askToStop.delete(scope);
      }
    },
    /** The turn was cancelled and lets its external calls in flight finish (or park). */
    lettingCallsFinish: (): boolean => letFinish,
  };
}
