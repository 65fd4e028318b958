import type { Env } from './config';

// Where a worker sends traces and metrics, from the standard OpenTelemetry variables
// (docs/observability.md). Unset, there is no exporter and no interceptor: tracing off costs nothing.

export interface TelemetrySettings {
  /** OTLP/HTTP traces endpoint (…/v1/traces) and the service name spans carry. */
  traces?: { url: string; serviceName: string };
  /** The runtime's metrics: a Prometheus endpoint it serves, or an OTLP/HTTP endpoint (…/v1/metrics) it pushes to. */
  metrics?: { prometheus: string } | { otlp: string };
}

const read = (name: string, env: Env): string | undefined => env[name]?.trim() || undefined;

/** `base` with `path` appended, as the OTLP exporters do with OTEL_EXPORTER_OTLP_ENDPOINT. */
function signalUrl(name: string, value: string, path?: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${name} must be a URL such as http://localhost:4318, got '${value.slice(0, 80)}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error(
      `${name} must be an http(s) URL (OTLP over HTTP, port 4318 by default), got '${value.slice(0, 80)}'`,
    );
  return path ? `${value.replace(/\/+$/, '')}${path}` : value;
}

function exporterChoice(name: string, env: Env, allowed: readonly string[]): string | undefined {
  const v = read(name, env)?.toLowerCase();
  if (v !== undefined && !allowed.includes(v))
    throw new Error(`${name}=${v} is not supported here; use ${allowed.join(' or ')} (docs/observability.md)`);
  return v;
}

/** The telemetry in `env`; a bad variable is a one-line error naming it. */
export function telemetryFrom(env: Env): TelemetrySettings {
  if (read('OTEL_SDK_DISABLED', env)?.toLowerCase() === 'true') return {};
  const protocol = read('OTEL_EXPORTER_OTLP_PROTOCOL', env);
  if (protocol !== undefined && !protocol.startsWith('http/'))
    throw new Error(
      `OTEL_EXPORTER_OTLP_PROTOCOL=${protocol}: this worker exports OTLP over HTTP; unset it or use http/protobuf, and point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's HTTP port (4318)`,
    );
  const base = read('OTEL_EXPORTER_OTLP_ENDPOINT', env);
  const out: TelemetrySettings = {};

  const tracesExporter = exporterChoice('OTEL_TRACES_EXPORTER', env, ['otlp', 'none']);
  const tracesEndpoint = read('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', env);
  if (tracesExporter !== 'none' && (tracesEndpoint || base)) {
    out.traces = {
      url: tracesEndpoint
        ? signalUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', tracesEndpoint)
        : signalUrl('OTEL_EXPORTER_OTLP_ENDPOINT', base!, '/v1/traces'),
      serviceName: read('OTEL_SERVICE_NAME', env) ?? 'openworker-temporal',
    };
  }

  const metricsExporter = exporterChoice('OTEL_METRICS_EXPORTER', env, ['otlp', 'prometheus', 'none']);
  const metricsEndpoint = read('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT', env);
  if (metricsExporter === 'prometheus') {
    const host = read('OTEL_EXPORTER_PROMETHEUS_HOST', env) ?? '127.0.0.1';
    const port = read('OTEL_EXPORTER_PROMETHEUS_PORT', env) ?? '9464';
    if (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65535)
      throw new Error(
        `OTEL_EXPORTER_PROMETHEUS_PORT must be a port 1-65535, got '${port.slice(0, 20)}' (default 9464)`,
      );
    out.metrics = { prometheus: `${host.includes(':') ? `[${host}]` : host}:${port}` };
  } else if (metricsExporter !== 'none' && (metricsEndpoint || base)) {
    out.metrics = {
      otlp: metricsEndpoint
        ? signalUrl('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT', metricsEndpoint)
        : signalUrl('OTEL_EXPORTER_OTLP_ENDPOINT', base!, '/v1/metrics'),
    };
  }
  return out;
}
