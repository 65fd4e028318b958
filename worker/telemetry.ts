import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type {
  OpenTelemetryPlugin,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { TelemetrySettings } from '../runtime/telemetry';

// Tracing's entry points. The OpenTelemetry SDK (worker/otelSdk.ts) is loaded on first use: ~200 ms
// of modules that a worker or command that does not trace never loads.

/** Where a worker's spans go. */
export interface TracingOptions {
  /** Receives every span: the SDK's, the turn's waits, the activities'. E.g. a BatchSpanProcessor over an OTLP exporter. */
  spanProcessor: SpanProcessor;
  /** `service.name` on every span. Default `openworker-temporal`. */
  serviceName?: string;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const sdk = () => require('./otelSdk') as typeof import('./otelSdk');

/**
 * The SDK's OpenTelemetryPlugin over `options`. Put it before OpenWorkerPlugin in `plugins` and give
 * the worker a `workflowsPath` (yours, or AGENT_WORKFLOWS_MODULE): the worker then bundles at start
 * with the SDK's workflow interceptors and the turn's (workflows/tracing.ts) before them.
 */
export function tracingPlugin(options: TracingOptions): OpenTelemetryPlugin {
  return sdk().tracingPlugin(options);
}

/** Tracing from OTEL_* (settings.telemetry): spans batched to the OTLP/HTTP endpoint; undefined when unset. */
export function tracingFromSettings(telemetry: TelemetrySettings): TracingOptions | undefined {
  return telemetry.traces ? sdk().tracingFromSettings(telemetry) : undefined;
}

/**
 * For a client, from OTEL_*: the SDK's client interceptor, so what a command starts, signals or
 * updates carries its trace context; `flush` exports what is buffered (call it when the client
 * closes). Undefined when tracing is not configured.
 */
export function clientTracing(
  telemetry: TelemetrySettings,
): { interceptor: OpenTelemetryWorkflowClientInterceptor; flush: () => Promise<void> } | undefined {
  return telemetry.traces ? sdk().clientTracing(telemetry) : undefined;
}
