import { strict as assert } from 'node:assert';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Worker, bundleWorkflowCode } from '@temporalio/worker';
import { approve } from '../client/decisions';
import type { OpenWorkerClient } from '../client/connection';
import { connectClient } from '../client/connection';
import { turnStatus } from '../client/session';
import { freePort } from '../dev/server';
import { defaultDataConverter } from '../runtime/dataConverter';
import { OpenWorkerPlugin } from '../worker/plugin';
import { tracingPlugin } from '../worker/telemetry';
import { createWorker } from '../worker/worker';
import { AGENT_WORKFLOWS_MODULE } from '../worker/workflowModules';
import { settingsFrom } from '../runtime/settings';
import { METRICS } from '../workflows/telemetry';
import { FIXTURE_CONVERTER_ENV, recordedHistories } from './support/histories';
import { RECORDER, recorderEvents } from './support/mcpServers';
import { runCli } from './support/processes';
import { eventually, scripted, startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Traces and metrics (docs/observability.md), against the shared dev server and a real MCP server
// process (test/support/mcpRecorder.ts). Traces: an in-process worker whose spans go to an in-memory
// exporter. Metrics: a worker process serving the runtime's Prometheus endpoint, scraped over HTTP.

const recorderServers = (log: string) => ({
  servers: { rec: { command: process.execPath, args: [RECORDER], env: { RECORDER_LOG: log } } },
});

const named = (spans: ReadableSpan[], name: string): ReadableSpan => {
  const found = spans.filter((s) => s.name === name);
  assert.equal(found.length, 1, `one span ${name}; spans: ${spans.map((s) => s.name).join(', ')}`);
  return found[0]!;
};
const quiet = { trace() {}, debug() {}, info() {}, warn() {}, error() {}, log() {} };
const ms = (t: [number, number]): number => t[0] * 1e3 + t[1] / 1e6;

describe('OpenTelemetry: traces and metrics', function () {
  this.timeout(120_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'openworker-otel-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  describe('traces (in-process worker, in-memory exporter)', () => {
    const exporter = new InMemorySpanExporter();
    let c: OpenWorkerClient;
    let stop: () => Promise<void>;
    let log: string;

    before(async function () {
      this.timeout(120_000);
      const taskQueue = uniq('otel');
      log = join(dir, 'recorder.jsonl');
      const mcp = join(dir, 'mcp.json');
      writeFileSync(mcp, JSON.stringify(recorderServers(log)));
      const made = await createWorker({
        taskQueue,
        builtins: false,
        mcp,
        model: scripted([
          { toolCalls: [{ id: 'n1', name: 'rec__note', arguments: { text: 'traced' } }] },
          { text: 'ok' },
        ]),
        tracing: { spanProcessor: new SimpleSpanProcessor(exporter) },
        log: () => undefined,
      });
      const running = made.worker.run();
      c = await connectClient({ taskQueue });
      stop = async () => {
        made.worker.shutdown();
        await running;
        await made.mcp?.close();
        await made.connection.close();
        await c.close();
      };
    });
    after(async () => stop?.());

    it('one trace per turn: model call, approval wait, dispatch and tool, parented; the MCP server gets its traceparent', async () => {
      const sessionId = uniq('otel-s');
      const t = await startTurn(c, sessionId, 'note it');
      assert.equal(t.state, 'awaiting_approval');
      await approve(c, { sessionId, toolCallId: 'n1', by: 'alice' });
      const done = await turnClosed(c, t);
      assert.equal(done.state, 'completed');
      const executionId = done.ledger[0]!.executionId;

      // The turn's RunWorkflow span ends with the turn; its task's spans leave through the sink.
      const run = await eventually(
        async () => exporter.getFinishedSpans().find((s) => s.name === 'RunWorkflow:agentTurn'),
        'the turn span is exported',
      );
      const trace = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === run.spanContext().traceId);
      const parentOf = (s: ReadableSpan) => trace.find((p) => p.spanContext().spanId === s.parentSpanId);

      // The session started the turn in a trace of its own: the session's spans are elsewhere.
      const start = named(trace, 'StartChildWorkflow:agentTurn');
      assert.equal(parentOf(run), start);
      assert.equal(start.parentSpanId, undefined, 'the turn trace starts at the session starting it');
      assert.ok(!trace.some((s) => s.name === 'RunWorkflow:session'));

      const modelCalls = trace.filter((s) => s.name === 'StartActivity:callModel');
      assert.equal(modelCalls.length, 2, 'two model calls: the tool call, then the answer');
      for (const m of modelCalls) assert.equal(parentOf(m), run);
      const modelRuns = trace.filter((s) => s.name === 'RunActivity:callModel');
      assert.equal(modelRuns.length, 2);
      for (const r of modelRuns) assert.ok(modelCalls.includes(parentOf(r)!), 'a model run under its start');

      const wait = named(trace, 'ApprovalWait:rec__note');
      assert.equal(parentOf(wait), run);
      assert.deepEqual(
        [
          wait.attributes['openworker.tool'],
          wait.attributes['openworker.execution_id'],
          wait.attributes['openworker.outcome'],
        ],
        ['rec__note', executionId, 'running'],
      );
      assert.equal(wait.attributes['openworker.session'], sessionId);

      const dispatch = named(trace, 'StartActivity:executeTool');
      const tool = named(trace, 'RunActivity:executeTool');
      assert.equal(parentOf(dispatch), run);
      assert.equal(parentOf(tool), dispatch);
      assert.equal(tool.attributes['openworker.tool'], 'rec__note');
      assert.equal(tool.attributes['openworker.execution_id'], executionId);

      // In order: the first model call, the wait, the dispatch.
      const firstModel = modelCalls.sort((a, b) => ms(a.startTime) - ms(b.startTime))[0]!;
      assert.ok(ms(firstModel.endTime) <= ms(wait.startTime) + 1, 'the wait starts after the model call');
      assert.ok(ms(wait.endTime) <= ms(dispatch.startTime) + 1, 'the dispatch starts after the decision');

      // The decision, sent by a client that does not trace, joins the turn's trace.
      const decision = trace.find((s) => s.name.startsWith('HandleSignal:'));
      assert.ok(decision, `a decision span in the turn trace: ${trace.map((s) => s.name).join(', ')}`);
      assert.equal(parentOf(decision), run);

      // The MCP tools/call carried the tool span's context in _meta.
      const note = recorderEvents(log).find((e) => e.event === 'note');
      assert.equal(note?.executionId, executionId);
      assert.equal(note?.traceparent, `00-${tool.spanContext().traceId}-${tool.spanContext().spanId}-01`);
    });
  });

  describe('metrics (worker process, Prometheus endpoint)', () => {
    const w = useWorld();

    let collector: Server | undefined;
    after(() => collector?.close());

    it('counts parks, decisions, time to decision, recovery_required and unknown outcomes; OTEL_* sends spans over OTLP/HTTP', async () => {
      const port = await freePort();
      // A stand-in for the collector's OTLP/HTTP receiver: what the worker POSTs to /v1/traces.
      const posted: string[] = [];
      collector = createServer((req, res) => {
        let body = '';
        req.on('data', (d: Buffer) => (body += d.toString()));
        req.on('end', () => {
          if (req.url === '/v1/traces') posted.push(body);
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        });
      });
      await new Promise<void>((r) => collector!.listen(0, '127.0.0.1', r));
      const otlp = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
      const log = join(dir, 'metrics-recorder.jsonl');
      const mcp = join(dir, 'metrics-mcp.json');
      writeFileSync(mcp, JSON.stringify(recorderServers(log)));
      await w.worker(
        scripted([
          { toolCalls: [{ id: 'n1', name: 'rec__note', arguments: { text: 'first' } }] },
          { text: 'noted' },
          { toolCalls: [{ id: 'h1', name: 'rec__hold', arguments: { label: 'x' } }] },
          { text: 'held' },
        ]),
        {
          extraArgs: ['--mcp', mcp],
          env: {
            OTEL_METRICS_EXPORTER: 'prometheus',
            OTEL_EXPORTER_PROMETHEUS_PORT: String(port),
            OTEL_EXPORTER_OTLP_ENDPOINT: otlp,
            OTEL_SERVICE_NAME: 'otel-test',
            OTEL_BSP_SCHEDULE_DELAY: '200',
          },
        },
      );
      const sessionId = uniq('otel-m');
      const t1 = await startTurn(w.c, sessionId, 'note it');
      await approve(w.c, { sessionId, toolCallId: 'n1', by: 'alice' });
      await turnClosed(w.c, t1);

      // A call whose MCP server dies mid-call: outcome unknown, then recovery_required, then decided.
      const t2 = await startTurn(w.c, sessionId, 'hold it');
      await approve(w.c, { sessionId, toolCallId: 'h1', by: 'alice' });
      const received = await eventually(
        async () => recorderEvents(log).find((e) => e.event === 'received'),
        'the server holds the call',
      );
      process.kill(received.pid as number, 'SIGKILL');
      await eventually(async () => {
        const s = await turnStatus(w.c, t2.workflowId);
        return s.ledger[0]?.state === 'recovery_required';
      }, 'the call parks in recovery_required');
      // The command traces too (OTEL_* set): its signal's span reaches the endpoint when it exits.
      const res = await runCli(
        ['recover', sessionId, 'h1', '--decision', 'failed', '--by', 'ops', '--task-queue', w.taskQueue],
        { env: { OTEL_EXPORTER_OTLP_ENDPOINT: otlp, OTEL_METRICS_EXPORTER: 'none' } },
      );
      assert.equal(res.code, 0, res.stderr);
      await turnClosed(w.c, t2);

      const want: [string, number][] = [
        [`${METRICS.parked}{tool="rec__note",wait="approval"}`, 1],
        [`${METRICS.resumed}{outcome="running",tool="rec__note",wait="approval"}`, 1],
        [`${METRICS.waitMs}_count{outcome="running",tool="rec__note",wait="approval"}`, 1],
        [`${METRICS.parked}{tool="rec__hold",wait="approval"}`, 1],
        [`${METRICS.unknownOutcomes}{tool="rec__hold"}`, 1],
        [`${METRICS.parked}{tool="rec__hold",wait="recovery"}`, 1],
        [`${METRICS.resumed}{outcome="failed",tool="rec__hold",wait="recovery"}`, 1],
      ];
      const scraped = await eventually(
        async () => {
          const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
          const values = parsePrometheus(text);
          return want.every(([k, v]) => values.get(k) === v) && values;
        },
        `the worker's /metrics shows ${want.map(([k]) => k).join(', ')}`,
      );
      // The spans reached the OTLP endpoint, the approval wait among them, under the service name.
      await eventually(
        async () => posted.some((b) => b.includes('ApprovalWait:rec__note') && b.includes('otel-test')),
        'the worker posts the approval wait span to /v1/traces',
      );
      assert.ok(
        posted.some((b) => b.includes('SignalWorkflow:recover')),
        'the recover command posted its SignalWorkflow:recover span',
      );
      // Labels are tool, wait and outcome (and the SDK's namespace, task queue, workflow type): never IDs.
      for (const key of scraped.keys())
        if (key.startsWith('openworker_')) assert.doesNotMatch(key, /owx-|session|toolCallId|execution/, key);
    });
  });

  it('every recorded history replays with tracing on (no command changes)', async function () {
    this.timeout(180_000);
    const histories = recordedHistories().map((r) => ({ workflowId: r.workflowId, history: r.history }));
    const failures: string[] = [];
    const plugins = [
      tracingPlugin({ spanProcessor: new SimpleSpanProcessor(new InMemorySpanExporter()) }),
      new OpenWorkerPlugin({ settings: settingsFrom(FIXTURE_CONVERTER_ENV) }),
    ];
    // The bundle a tracing worker runs: the SDK's workflow interceptors, and the turn's before them.
    const { code } = await bundleWorkflowCode({ workflowsPath: AGENT_WORKFLOWS_MODULE, plugins, logger: quiet });
    const at = (m: RegExp) => code.search(m);
    assert.ok(
      at(/workflows\/tracing\.js/) > 0 && at(/workflows\/tracing\.js/) < at(/workflow-interceptors\.js/),
      'both, ours first',
    );
    const results = Worker.runReplayHistories(
      {
        replayName: 'otel',
        workflowBundle: { code },
        dataConverter: defaultDataConverter(FIXTURE_CONVERTER_ENV),
        plugins,
      },
      histories as never,
    );
    for await (const r of results) if (r.error) failures.push(`${r.workflowId}: ${r.error.message}`);
    assert.deepEqual(failures, []);
    assert.ok(histories.length >= 3);
  });
});

/** `name{labels}` → value, the labels sorted and the SDK's own (namespace, task_queue, …) left out. */
function parsePrometheus(text: string): Map<string, number> {
  const out = new Map<string, number>();
  const sdk = new Set(['namespace', 'taskQueue', 'workflowType', 'task_queue', 'workflow_type', 'service_name']);
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? ([^ ]+)$/.exec(line);
    if (!m) continue;
    const labels = [...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)]
      .filter(([, k]) => !sdk.has(k!))
      .map(([, k, v]) => `${k}="${v}"`)
      .sort();
    const key = labels.length ? `${m[1]}{${labels.join(',')}}` : m[1]!;
    out.set(key, (out.get(key) ?? 0) + Number(m[3]));
  }
  return out;
}
