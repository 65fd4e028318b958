import { strict as assert } from 'node:assert';
import { settingsFrom } from '../../runtime/settings';
import type { TelemetrySettings } from '../../runtime/telemetry';
import { telemetryFrom } from '../../runtime/telemetry';
import { runtimeTelemetry } from '../../worker/metrics';
import type { CallTransition } from '../../workflows/telemetry';
import { METRICS, callTransitions } from '../../workflows/telemetry';
import type { CallState, LedgerEntry } from '../../workflows/types';
import { AT, entryIn } from './helpers';

// The pure parts of traces and metrics (docs/observability.md): what a ledger write means to an
// operator, and which OTEL_* variables turn what on.

const withUnknowns = (state: CallState, n: number): LedgerEntry =>
  entryIn(state, {
    tool: 'pay',
    events: Array.from({ length: n }, () => ({ at: AT, type: 'outcome_unknown', reason: 'timeout' })),
  });

describe('telemetry: callTransitions', () => {
  const e = (state: CallState) => entryIn(state, { tool: 'pay' });
  const cases: [string, LedgerEntry | undefined, LedgerEntry, CallTransition[]][] = [
    [
      'a new call that needs approval parks',
      undefined,
      e('awaiting_approval'),
      [{ kind: 'parked', wait: 'approval', tool: 'pay' }],
    ],
    ['a new auto-approved call does not', undefined, e('running'), []],
    [
      'a new imported call parks for recovery',
      undefined,
      e('recovery_required'),
      [{ kind: 'parked', wait: 'recovery', tool: 'pay' }],
    ],
    [
      'approved',
      e('awaiting_approval'),
      e('running'),
      [{ kind: 'resumed', wait: 'approval', tool: 'pay', outcome: 'running' }],
    ],
    [
      'rejected',
      e('awaiting_approval'),
      e('rejected'),
      [{ kind: 'resumed', wait: 'approval', tool: 'pay', outcome: 'rejected' }],
    ],
    ['edited, still waiting', e('awaiting_approval'), e('awaiting_approval'), []],
    ['dispatched', e('running'), e('dispatched'), []],
    [
      'an unknown outcome parks for recovery',
      withUnknowns('dispatched', 0),
      withUnknowns('recovery_required', 1),
      [
        { kind: 'unknown_outcome', tool: 'pay' },
        { kind: 'parked', wait: 'recovery', tool: 'pay' },
      ],
    ],
    [
      'an unknown outcome then reconciling',
      withUnknowns('dispatched', 0),
      withUnknowns('reconciling', 1),
      [{ kind: 'unknown_outcome', tool: 'pay' }],
    ],
    [
      'the same unknown outcome is counted once',
      withUnknowns('reconciling', 1),
      withUnknowns('recovery_required', 1),
      [{ kind: 'parked', wait: 'recovery', tool: 'pay' }],
    ],
    [
      'a retry decided',
      e('recovery_required'),
      e('running'),
      [{ kind: 'resumed', wait: 'recovery', tool: 'pay', outcome: 'running' }],
    ],
    [
      'marked failed',
      e('recovery_required'),
      e('failed'),
      [{ kind: 'resumed', wait: 'recovery', tool: 'pay', outcome: 'failed' }],
    ],
    ['a fenced retry still waits', e('recovery_required'), e('recovery_required'), []],
    ['an ask_user question is not an approval', undefined, e('awaiting_answer'), []],
  ];
  for (const [name, before, after, want] of cases)
    it(name, () => assert.deepEqual(callTransitions(before, after), want));

  it('labels carry no argument, ID or reason', () => {
    const all = cases.flatMap(([, b, a]) => callTransitions(b, a));
    for (const t of all)
      assert.deepEqual(
        Object.keys(t).filter((k) => !['kind', 'wait', 'tool', 'outcome'].includes(k)),
        [],
      );
    assert.deepEqual(
      Object.values(METRICS).filter((m) => !/^openworker_[a-z_]+$/.test(m)),
      [],
    );
  });
});

describe('telemetry: telemetryFrom (OTEL_* variables)', () => {
  const ok: [string, Record<string, string>, TelemetrySettings][] = [
    ['nothing set: off', {}, {}],
    [
      'one endpoint: traces and metrics over OTLP/HTTP',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' },
      {
        traces: { url: 'http://collector:4318/v1/traces', serviceName: 'openworker-temporal' },
        metrics: { otlp: 'http://collector:4318/v1/metrics' },
      },
    ],
    [
      'per-signal endpoints are taken as they are; the service name',
      {
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://t.example/in',
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'https://m.example/in',
        OTEL_SERVICE_NAME: 'agents',
      },
      { traces: { url: 'https://t.example/in', serviceName: 'agents' }, metrics: { otlp: 'https://m.example/in' } },
    ],
    [
      'traces off, Prometheus on its default port',
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
        OTEL_TRACES_EXPORTER: 'none',
        OTEL_METRICS_EXPORTER: 'prometheus',
      },
      { metrics: { prometheus: '127.0.0.1:9464' } },
    ],
    [
      'Prometheus on a host and port',
      {
        OTEL_METRICS_EXPORTER: 'prometheus',
        OTEL_EXPORTER_PROMETHEUS_HOST: '0.0.0.0',
        OTEL_EXPORTER_PROMETHEUS_PORT: '9100',
      },
      { metrics: { prometheus: '0.0.0.0:9100' } },
    ],
    [
      'metrics off',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_METRICS_EXPORTER: 'none' },
      { traces: { url: 'http://c:4318/v1/traces', serviceName: 'openworker-temporal' } },
    ],
    ['OTEL_SDK_DISABLED wins', { OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }, {}],
    ['http/protobuf is fine', { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }, {}],
  ];
  for (const [name, env, want] of ok) it(name, () => assert.deepEqual(telemetryFrom(env), want));

  const bad: [Record<string, string>, RegExp][] = [
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /^OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL/],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' },
      /^OTEL_EXPORTER_OTLP_ENDPOINT must be a URL such as http:\/\/localhost:4318/,
    ],
    [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, /^OTEL_EXPORTER_OTLP_PROTOCOL=grpc: this worker exports OTLP over HTTP/],
    [{ OTEL_TRACES_EXPORTER: 'jaeger' }, /^OTEL_TRACES_EXPORTER=jaeger is not supported here; use otlp or none/],
    [
      { OTEL_METRICS_EXPORTER: 'prometheus', OTEL_EXPORTER_PROMETHEUS_PORT: '99999' },
      /^OTEL_EXPORTER_PROMETHEUS_PORT must be a port 1-65535/,
    ],
  ];
  for (const [env, message] of bad)
    it(`refuses ${JSON.stringify(env)} in one line`, () => {
      assert.throws(
        () => telemetryFrom(env),
        (err: Error) => message.test(err.message) && !err.message.includes('\n'),
      );
    });

  it('settingsFrom reports a bad OTEL_* variable with the others', () => {
    assert.throws(() => settingsFrom({ OTEL_TRACES_EXPORTER: 'zipkin' }), /OTEL_TRACES_EXPORTER=zipkin/);
  });
});

describe('telemetry: runtimeTelemetry (the Runtime metrics exporter)', () => {
  it('none, Prometheus or OTLP/HTTP; the wait histogram gets buckets up to a week', () => {
    assert.deepEqual(runtimeTelemetry({}), {});
    const prom = runtimeTelemetry({ metrics: { prometheus: '127.0.0.1:9464' } });
    assert.equal(prom.metrics && 'prometheus' in prom.metrics && prom.metrics.prometheus.bindAddress, '127.0.0.1:9464');
    const otlp = runtimeTelemetry({ metrics: { otlp: 'http://c:4318/v1/metrics' } });
    assert.ok(otlp.metrics && 'otel' in otlp.metrics);
    assert.equal(otlp.metrics.otel.url, 'http://c:4318/v1/metrics');
    assert.equal(otlp.metrics.otel.http, true);
    assert.equal(otlp.metrics.otel.histogramBucketOverrides?.[METRICS.waitMs]?.at(-1), 7 * 24 * 3600 * 1000);
  });
});
