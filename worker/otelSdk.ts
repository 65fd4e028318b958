import { context, propagation } from '@opentelemetry/api';
import type { Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OpenTelemetryPlugin, OpenTelemetryWorkflowClientInterceptor } from '@temporalio/interceptors-opentelemetry';
import type { TelemetrySettings } from '../runtime/telemetry';
import type { TracingOptions } from './telemetry';

// Loaded only when tracing is on (worker/telemetry.ts): ~200 ms of modules otherwise no worker pays.
// Traces through the SDK's OpenTelemetryPlugin (client, workflow and activity interceptors, and a
// sink that exports the workflow's spans), and the runtime's metrics. docs/observability.md.

let globalsSet = false;

/**
 * W3C trace context and an async-hooks context manager, process-wide, unless the process set its
 * own: the SDK's headers and the activities' `_meta` (activities/tracing.ts) go through them.
 */
function registerGlobals(): void {
  if (globalsSet) return;
  globalsSet = true;
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
}

/**
 * The SDK's OpenTelemetryPlugin over `options`. Put it before OpenWorkerPlugin in `plugins`: the
 * turn's own tracing interceptors (workflows/tracing.ts) then join the bundle, which is built at
 * start (the prebuilt bundle has no interceptors).
 */
export function tracingPlugin(options: TracingOptions): OpenTelemetryPlugin {
  const { resource, tracer } = tracerFor(options);
  return new OpenTelemetryPlugin({ resource, spanProcessor: options.spanProcessor, tracer });
}

/** The service's resource and a tracer exporting through `options.spanProcessor`; sets the globals once. */
function tracerFor(options: TracingOptions): { resource: Resource; tracer: Tracer } {
  registerGlobals();
  const resource = new Resource({ 'service.name': options.serviceName ?? 'openworker-temporal' });
  const provider = new BasicTracerProvider({ resource, spanProcessors: [options.spanProcessor] });
  return { resource, tracer: provider.getTracer('openworker-temporal') };
}

/** Tracing from OTEL_* (settings.telemetry): spans batched to the OTLP/HTTP endpoint; undefined when unset. */
export function tracingFromSettings(telemetry: TelemetrySettings): TracingOptions | undefined {
  if (!telemetry.traces) return undefined;
  return {
    spanProcessor: new BatchSpanProcessor(new OTLPTraceExporter({ url: telemetry.traces.url })),
    serviceName: telemetry.traces.serviceName,
  };
}

/**
 * For a client from OTEL_* (settings.telemetry): the SDK's client interceptor, so a command's start,
 * signal or update carries its trace context to the workflow; `flush` exports what is buffered
 * (call it when the client closes). Undefined when tracing is not configured.
 */
export function clientTracing(
  telemetry: TelemetrySettings,
): { interceptor: OpenTelemetryWorkflowClientInterceptor; flush: () => Promise<void> } | undefined {
  const options = tracingFromSettings(telemetry);
  if (!options) return undefined;
  return {
    interceptor: new OpenTelemetryWorkflowClientInterceptor({ tracer: tracerFor(options).tracer }),
    flush: () => options.spanProcessor.forceFlush(),
  };
}
