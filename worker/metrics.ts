import type { TelemetryOptions } from '@temporalio/worker';
import type { TelemetrySettings } from '../runtime/telemetry';
import { METRICS, WAIT_HISTOGRAM_BUCKETS_MS } from '../workflows/telemetry';

// The runtime's metrics: the SDK's own and the turn's (workflows/callTelemetry.ts), both through
// the Runtime's exporter. docs/observability.md.

/** The Runtime's telemetry options for settings.telemetry's metrics (Runtime.install at an entry point). */
export function runtimeTelemetry(telemetry: TelemetrySettings): TelemetryOptions {
  const m = telemetry.metrics;
  if (!m) return {};
  // Approvals wait minutes to weeks: the runtime's default buckets stop far below that.
  const histogramBucketOverrides = { [METRICS.waitMs]: [...WAIT_HISTOGRAM_BUCKETS_MS] };
  return 'prometheus' in m
    ? { metrics: { prometheus: { bindAddress: m.prometheus, histogramBucketOverrides } } }
    : { metrics: { otel: { url: m.otlp, http: true, metricsExportInterval: '10s', histogramBucketOverrides } } };
}
