import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectClient } from '../client/connection';
import type { OpenWorkerClient } from '../client/connection';
import { startDevServer } from '../dev/server';
import { DYNAMIC, OUT } from './config';
import { eventName } from './events';
import type { HistoryEvent } from './events';
import { cpuMs, temporalTurn } from './matrix';
import { freePort, killHard, startBenchWorker } from './procs';
import type { BenchWorker } from './procs';
import { calls } from './workload';
import { tick } from './breakdownWorkflow';

// npm run bench:breakdown [-- --turns 40]: where the server's time goes per protected call, for B1
// (the idiomatic loop) and B3 (ours), one turn at a time on a fresh server. Three parts:
// 1. the primitives' prices: server CPU of one upsert, one patch, one activity with the workflow task
//    its result wakes, one awaited heartbeat, one signal with its task, one child workflow, each the
//    slope between a workflow doing 0 and doing PRIM_N of it (bench/breakdownWorkflow.ts);
// 2. each turn's history sorted by cause, and the server's own request counters per turn;
// 3. the turn's server CPU priced from (1) × (2), next to what /proc measured.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const argv = process.argv;
const TURNS = argv.includes('--turns') ? Number(argv[argv.indexOf('--turns') + 1]) : 40;
const PRIM_N = 8;

type Cause =
  | 'start and end'
  | 'workflow tasks'
  | 'model activities'
  | 'tool activities'
  | 'signals'
  | 'state upserts'
  | 'patch markers and their upserts'
  | 'local activity markers'
  | 'other';

/** What caused an event (a patch marker's TemporalChangeVersion upsert goes with its marker). */
function causeOf(e: HistoryEvent): Cause {
  const name = eventName(e);
  if (name.startsWith('WORKFLOW_EXECUTION_') && name !== 'WORKFLOW_EXECUTION_SIGNALED') return 'start and end';
  if (name.startsWith('WORKFLOW_TASK_')) return 'workflow tasks';
  if (name === 'WORKFLOW_EXECUTION_SIGNALED') return 'signals';
  if (name.startsWith('ACTIVITY_TASK_')) return 'model activities'; // refined by activity type below
  const upsert = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
  if (upsert) return upsert.TemporalChangeVersion ? 'patch markers and their upserts' : 'state upserts';
  const marker = e.markerRecordedEventAttributes?.markerName;
  if (marker === 'core_patch') return 'patch markers and their upserts';
  if (marker) return 'local activity markers';
  return 'other';
}

function eventsByCause(events: HistoryEvent[]): Record<Cause, number> {
  const out = {} as Record<Cause, number>;
  const typeOf = new Map<string, string>();
  for (const e of events) {
    let cause = causeOf(e);
    const s = e.activityTaskScheduledEventAttributes;
    if (s) typeOf.set(String(e.eventId), s.activityType?.name ?? '');
    if (cause === 'model activities') {
      const scheduledId = String(
        s
          ? e.eventId
          : (e.activityTaskStartedEventAttributes?.scheduledEventId ??
              e.activityTaskCompletedEventAttributes?.scheduledEventId ??
              e.activityTaskFailedEventAttributes?.scheduledEventId),
      );
      const type = typeOf.get(scheduledId) ?? '';
      if (!/Model|compact/i.test(type)) cause = 'tool activities';
    }
    out[cause] = (out[cause] ?? 0) + 1;
  }
  return out;
}

/** The server's request counters (Prometheus text), summed by metric and operation. */
async function serverCounters(port: number): Promise<Map<string, number>> {
  await sleep(2500); // the server reports its counters every second: let the last requests land
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^(service_requests|persistence_requests|visibility_persistence_requests)\{(.*)\} ([0-9.e+]+)$/.exec(
      line,
    );
    if (!m) continue;
    const op = /operation="([^"]+)"/.exec(m[2]!)?.[1] ?? '?';
    const key = `${m[1]} ${op}`;
    out.set(key, (out.get(key) ?? 0) + Number(m[3]));
  }
  return out;
}

const diff = (a: Map<string, number>, b: Map<string, number>, per: number): Record<string, number> =>
  Object.fromEntries(
    [...b]
      .map(([k, v]) => [k, (v - (a.get(k) ?? 0)) / per] as const)
      .filter(([, v]) => v > 0.01)
      .sort((x, y) => y[1] - x[1]),
  );

interface Primitive {
  name: string;
  workflow: string;
  /** Signals are sent by the driver, one after the other. */
  signals?: boolean;
}

const PRIMITIVES: Primitive[] = [
  { name: 'state upsert', workflow: 'primUpserts' },
  { name: 'patch (marker + its upsert)', workflow: 'primPatches' },
  { name: 'activity + the task its result wakes', workflow: 'primActivities' },
  { name: 'awaited heartbeat', workflow: 'primHeartbeats' },
  { name: 'signal + its workflow task', workflow: 'primSignals', signals: true },
  { name: 'child workflow (start, its run, its result)', workflow: 'primChildren' },
];

/** Server CPU ms per run of `workflow(n)`, over `runs` runs one after the other. */
async function primitiveCost(c: OpenWorkerClient, serverPid: number, p: Primitive, n: number, runs: number) {
  let seq = 0;
  const once = async () => {
    const id = `prim-${p.workflow}-${n}-${Date.now()}-${++seq}`;
    const h = await c.client.workflow.start(p.workflow, { taskQueue: 'bench-prim', workflowId: id, args: [n] });
    if (p.signals)
      for (let i = 0; i < n; i++) {
        await sleep(25); // the last signal's workflow task has completed: each signal gets its own
        await h.signal(tick);
      }
    await h.result();
  };
  for (let i = 0; i < 3; i++) await once(); // warm
  const cpu0 = cpuMs(serverPid);
  for (let i = 0; i < runs; i++) await once();
  return (cpuMs(serverPid) - cpu0) / runs;
}

interface TurnRow {
  system: string;
  k: number;
  serverCpuMs: number;
  workerCpuMs: number;
  events: number;
  byCause: Record<string, number>;
  counters: Record<string, number>;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'openworker-breakdown-'));
  const metricsPort = await freePort();
  const server = await startDevServer({
    port: 0,
    headless: true,
    dbFile: join(dir, 'temporal.db'),
    dynamicConfig: DYNAMIC,
    metricsPort,
  });
  process.env.TEMPORAL_ADDRESS = server.address;
  process.env.OPENWORKER_PAYLOAD_STORE = join(dir, 'payloads');
  const procs: BenchWorker[] = [];
  const c = await connectClient({ address: server.address, taskQueue: 'bench-b3' });
  try {
    for (const system of ['b1', 'b3', 'prim'] as const)
      procs.push(await startBenchWorker({ system, taskQueue: `bench-${system}` }));
    const pidOf = (s: string) => procs.find((p) => p.identity.startsWith(`bench-${s}-`))!.pid;

    // 1. Prices.
    const prices: Record<string, number> = {};
    const bare = await primitiveCost(c, server.pid, { name: 'bare', workflow: 'primBare' }, 0, TURNS);
    prices['workflow start, one task, completion'] = bare;
    for (const p of process.env.BREAKDOWN_SKIP_PRICES ? [] : PRIMITIVES) {
      const zero = await primitiveCost(c, server.pid, p, 0, TURNS);
      const many = await primitiveCost(c, server.pid, p, PRIM_N, TURNS);
      prices[p.name] = (many - zero) / PRIM_N;
      console.log(`breakdown: ${p.name}: ${prices[p.name]!.toFixed(2)} ms`);
    }

    // 2. Turns, one at a time: B1 and B3, one and three protected calls in one response.
    const rows: TurnRow[] = [];
    let seq = 0;
    for (const k of [1, 3])
      for (const family of ['b1', 'b3'] as const) {
        const shape = { steps: calls(k, 'noop'), latencyMs: 0 };
        const ids: string[] = [];
        for (let i = 0; i < 3; i++) await temporalTurn(c, family, `warm-${family}-${k}-${++seq}`, shape);
        const before = await serverCounters(metricsPort);
        const cpu0 = { server: cpuMs(server.pid), worker: cpuMs(pidOf(family)) };
        for (let i = 0; i < TURNS; i++) {
          const id = `turn-${family}-${k}-${++seq}`;
          await temporalTurn(c, family, id, shape);
          ids.push(id);
        }
        const serverCpuMs = (cpuMs(server.pid) - cpu0.server) / TURNS;
        const workerCpuMs = (cpuMs(pidOf(family)) - cpu0.worker) / TURNS;
        const counters = diff(before, await serverCounters(metricsPort), TURNS);
        const byCause: Record<string, number> = {};
        let events = 0;
        for (const id of ids) {
          const h = await c.client.workflow.getHandle(id).fetchHistory();
          events += h.events?.length ?? 0;
          for (const [cause, n] of Object.entries(eventsByCause(h.events ?? [])))
            byCause[cause] = (byCause[cause] ?? 0) + n / TURNS;
        }
        rows.push({
          system: family.toUpperCase(),
          k,
          serverCpuMs,
          workerCpuMs,
          events: events / TURNS,
          byCause,
          counters,
        });
        console.log(
          `breakdown: ${family} k=${k}: server ${serverCpuMs.toFixed(1)} ms/turn, ${(events / TURNS).toFixed(1)} events`,
        );
      }

    const md = report(prices, rows);
    mkdirSync(OUT, { recursive: true });
    writeFileSync(join(OUT, 'breakdown.md'), md);
    writeFileSync(join(OUT, 'breakdown.json'), JSON.stringify({ turns: TURNS, primN: PRIM_N, prices, rows }, null, 2));
    console.log(md);
  } finally {
    for (const p of procs) await killHard(p);
    await c.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const f1 = (x: number | undefined) => (x === undefined ? '0' : x.toFixed(1));

/** The tables: prices; per turn, events by cause and server requests; CPU priced against measured. */
function report(prices: Record<string, number>, rows: TurnRow[]): string {
  const out: string[] = [`# Where the server's time goes (${TURNS} turns a cell, one at a time)`, ''];
  out.push('| primitive | server CPU ms |', '|---|---|');
  for (const [name, ms] of Object.entries(prices)) out.push(`| ${name} | ${ms.toFixed(2)} |`);
  const cols = rows.map((r) => `${r.system} k=${r.k}`);
  const causes = [...new Set(rows.flatMap((r) => Object.keys(r.byCause)))];
  out.push('', `| events per turn, by cause | ${cols.join(' | ')} |`, `|---|${cols.map(() => '---').join('|')}|`);
  for (const cause of causes) out.push(`| ${cause} | ${rows.map((r) => f1(r.byCause[cause])).join(' | ')} |`);
  out.push(`| **all** | ${rows.map((r) => f1(r.events)).join(' | ')} |`);
  const ops = [...new Set(rows.flatMap((r) => Object.keys(r.counters)))].filter(
    (k) => !/Poll|GetSystemInfo|DescribeNamespace|GetNamespace|ListClusterMetadata|GetClusterMetadata/.test(k),
  );
  out.push('', `| server requests per turn | ${cols.join(' | ')} |`, `|---|${cols.map(() => '---').join('|')}|`);
  for (const op of ops) out.push(`| ${op} | ${rows.map((r) => f1(r.counters[op])).join(' | ')} |`);
  out.push('', `| server CPU ms per turn, priced | ${cols.join(' | ')} |`, `|---|${cols.map(() => '---').join('|')}|`);
  const heartbeats = (r: TurnRow) => r.counters['service_requests RecordActivityTaskHeartbeat'] ?? 0;
  const activities = (r: TurnRow) => ((r.byCause['model activities'] ?? 0) + (r.byCause['tool activities'] ?? 0)) / 3; // scheduled, started, completed
  const priced: [string, (r: TurnRow) => number][] = [
    ['start, first task, completion', () => prices['workflow start, one task, completion']!],
    ['activities and their result tasks', (r) => activities(r) * prices['activity + the task its result wakes']!],
    ['signals and their tasks', (r) => (r.byCause.signals ?? 0) * prices['signal + its workflow task']!],
    ['state upserts', (r) => (r.byCause['state upserts'] ?? 0) * prices['state upsert']!],
    [
      'patch markers',
      (r) => ((r.byCause['patch markers and their upserts'] ?? 0) / 2) * prices['patch (marker + its upsert)']!,
    ],
    ['awaited heartbeats (dispatch marker)', (r) => heartbeats(r) * prices['awaited heartbeat']!],
  ];
  for (const [name, f] of priced) out.push(`| ${name} | ${rows.map((r) => f1(f(r))).join(' | ')} |`);
  const sum = (r: TurnRow) => priced.reduce((a, [, f]) => a + f(r), 0);
  out.push(`| **priced** | ${rows.map((r) => f1(sum(r))).join(' | ')} |`);
  out.push(`| **measured** | ${rows.map((r) => f1(r.serverCpuMs)).join(' | ')} |`);
  out.push(
    `| rest (payload sizes, merged tasks, noise) | ${rows.map((r) => f1(r.serverCpuMs - sum(r))).join(' | ')} |`,
  );
  out.push(`| worker CPU ms per turn | ${rows.map((r) => f1(r.workerCpuMs)).join(' | ')} |`);
  return out.join('\n') + '\n';
}

main().catch((err) => {
  console.error(`bench: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
