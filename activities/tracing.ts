import { context, propagation, trace } from '@opentelemetry/api';

// Trace context inside activities. Without tracing configured (worker/telemetry.ts registers the
// propagator and context manager only then) both are no-ops that cost a lookup.

/** W3C `traceparent` (and `tracestate`) of the running span, for a request's `_meta`; empty when not traced. */
export function traceMeta(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

/** Names the tool on the activity's span (RunActivity:executeTool), so a trace reads without the input. */
export function tagToolSpan(attributes: { tool: string; executionId: string; attempt: number }): void {
  trace.getActiveSpan()?.setAttributes({
    'openworker.tool': attributes.tool,
    'openworker.execution_id': attributes.executionId,
    'openworker.attempt': attributes.attempt,
  });
}
