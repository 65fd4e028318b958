// The turn's wait spans, without OpenTelemetry in the turn's code: workflows/tracing.ts (in the
// bundle only when the worker traces) installs these hooks; otherwise there are none and a wait
// costs a lookup. Module state is per workflow in the sandbox.

export interface TraceHooks {
  /** A wait began (a call parked): `key` names it until waitEnded. */
  waitStarted(key: string, name: string, attributes: Record<string, string | number>): void;
  waitEnded(key: string, attributes: Record<string, string | number>): void;
}

let hooks: TraceHooks | undefined;

export function setTraceHooks(h: TraceHooks | undefined): void {
  hooks = h;
}

export function traceHooks(): TraceHooks | undefined {
  return hooks;
}
