// Trace context inside activities. The OpenTelemetry API is loaded only once something in the
// process registered a global with it (worker/otelSdk.ts when the worker traces, or your own SDK):
// a worker that does not trace pays neither the module (~15-25 ms at start) nor a lookup per call.

type Api = typeof import('@opentelemetry/api');
/** Where @opentelemetry/api keeps its registered globals (propagator, context manager, provider). */
const OTEL_GLOBALS = Symbol.for('opentelemetry.js.api.1');
let api: Api | undefined;

function otel(): Api | undefined {
  if (api) return api;
  if (!(OTEL_GLOBALS in globalThis)) return undefined;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  api = require('@opentelemetry/api') as Api;
  return api;
}

/** W3C `traceparent` (and `tracestate`) of the running span, for a request's `_meta`; empty when not traced. */
export function traceMeta(): Record<string, string> {
  const carrier: Record<string, string> = {};
  const o = otel();
  o?.propagation.inject(o.context.active(), carrier);
  return carrier;
}

/** Names the tool on the activity's span (RunActivity:executeTool), so a trace reads without the input. */
export function tagToolSpan(attributes: { tool: string; executionId: string; attempt: number }): void {
  otel()?.trace.getActiveSpan()?.setAttributes({
    'openworker.tool': attributes.tool,
    'openworker.execution_id': attributes.executionId,
    'openworker.attempt': attributes.attempt,
  });
}
