import * as otel from '@opentelemetry/api';
import { TRACE_HEADER } from '@temporalio/interceptors-opentelemetry/lib/instrumentation';
import type {
  ActivityInput,
  LocalActivityInput,
  Next,
  SignalInput,
  StartChildWorkflowExecutionInput,
  WorkflowInboundCallsInterceptor,
  WorkflowInterceptors,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import { workflowInfo } from '@temporalio/workflow';
import { setTraceHooks } from './traceHooks';

/*
 * Workflow interceptors that shape the SDK's spans into one trace per turn. In the bundle only when
 * the worker traces (OpenWorkerPlugin puts this module before the OpenTelemetryPlugin's): ours run
 * first, so they choose the context the SDK's interceptors start their spans in.
 *   - A session starts each turn in a new trace (StartChildWorkflow:agentTurn is its root), rather
 *     than every turn of a long-lived session in the session's one trace.
 *   - A signal without trace context (a decision sent by an untraced client) joins the turn's trace
 *     instead of starting a trace of its own.
 *   - The waits for a person are spans (traceHooks.ts), children of the turn's RunWorkflow span.
 * No command is added or changed: spans leave through the SDK's sink, never through history.
 */

export const interceptors = (): WorkflowInterceptors => {
  // The context the workflow's own code runs in (its RunWorkflow span), learned at its first activity.
  let own: otel.Context | undefined;
  const learn = (): void => {
    own ??= otel.context.active();
  };
  const spans = new Map<string, otel.Span>();
  setTraceHooks({
    waitStarted(key, name, attributes) {
      spans.get(key)?.end();
      const tracer = otel.trace.getTracer('openworker-temporal');
      spans.set(key, tracer.startSpan(name, { attributes }, own ?? otel.context.active()));
    },
    waitEnded(key, attributes) {
      const span = spans.get(key);
      spans.delete(key);
      span?.setAttributes(attributes);
      span?.end();
    },
  });

  const inbound: WorkflowInboundCallsInterceptor = {
    handleSignal(input: SignalInput, next: Next<WorkflowInboundCallsInterceptor, 'handleSignal'>) {
      if (input.headers[TRACE_HEADER] !== undefined || own === undefined) return next(input);
      return otel.context.with(own, () => next(input));
    },
  };
  const outbound: WorkflowOutboundCallsInterceptor = {
    scheduleActivity(input: ActivityInput, next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>) {
      learn();
      return next(input);
    },
    scheduleLocalActivity(
      input: LocalActivityInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'scheduleLocalActivity'>,
    ) {
      learn();
      return next(input);
    },
    startChildWorkflowExecution(
      input: StartChildWorkflowExecutionInput,
      next: Next<WorkflowOutboundCallsInterceptor, 'startChildWorkflowExecution'>,
    ) {
      if (input.workflowType !== 'agentTurn' || workflowInfo().workflowType !== 'session') return next(input);
      return otel.context.with(otel.ROOT_CONTEXT, () => next(input));
    },
  };
  return { inbound: [inbound], outbound: [outbound] };
};
