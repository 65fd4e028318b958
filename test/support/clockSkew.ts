import { existsSync } from 'node:fs';

// Worker processes whose wall clock is off (NTP broken) while the Temporal server and the external
// systems keep true time: Debian's libfaketime, preloaded into the worker's Node process. Only the
// wall clock moves (FAKETIME_DONT_FAKE_MONOTONIC): timers, performance.now() and the SDK core's
// tokio runtime keep the real monotonic clock, as on a host whose NTP is broken.

export const FAKETIME_LIB = [
  process.env.OPENWORKER_FAKETIME_LIB,
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/faketime/libfaketime.so.1',
].find((p) => p && existsSync(p));

/** Skips the suite without libfaketime, except in CI; call from `before`. */
export function requireFaketime(ctx: Mocha.Context): void {
  if (FAKETIME_LIB) return;
  console.log('      (skipped: no libfaketime found; .ci/run installs faketime, or set OPENWORKER_FAKETIME_LIB)');
  if (process.env.CI) throw new Error('CI must have libfaketime: .ci/run installs faketime');
  ctx.skip();
}

/** The environment that runs a process with its wall clock `skewSeconds` off true time (negative: behind). */
export function skewedClockEnv(skewSeconds: number): Record<string, string> {
  if (!FAKETIME_LIB) throw new Error('no libfaketime: call requireFaketime first');
  if (!Number.isInteger(skewSeconds)) throw new Error(`clock skew must be whole seconds, got ${skewSeconds}`);
  const preload = [process.env.LD_PRELOAD, FAKETIME_LIB].filter(Boolean).join(':');
  return {
    LD_PRELOAD: preload,
    FAKETIME: `${skewSeconds >= 0 ? '+' : ''}${skewSeconds}s`,
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  };
}
