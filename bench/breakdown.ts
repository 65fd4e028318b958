import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectClient } from '../client/connection';
import type { OpenWorkerClient } from '../client/connection';
import { startDevServer } from '../dev/server';
import { DYNAMIC, OUT, usage } from './config';
import { eventName } from './events';
import type { HistoryEvent } from './events';
import { cpuMs, temporalTurn } from './matrix';
import { freePort, killHard, startBenchWorker } from './procs';
import type { BenchWorker } from './procs';
import { benchMessage, callIdsFor, calls } from './workload';
import type { TurnShape } from './workload';
import { sendMessage } from '../client/session';
import { approveSignal, decisionsSignal, sessionWorkflowId, turnWorkflowId } from '../workflows/definitions';
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
if (!Number.isInteger(TURNS) || TURNS < 1) usage(`--turns takes a whole number of turns a cell, 1 or more`);
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
  | 'child workflow'
  | 'other';

/** What caused an event (a patch marker's TemporalChangeVersion upsert goes with its marker). */
function causeOf(e: HistoryEvent): Cause {
  const name = eventName(e);
  if (name.startsWith('WORKFLOW_EXECUTION_') && name !== 'WORKFLOW_EXECUTION_SIGNALED') return 'start and end';
  if (name.startsWith('WORKFLOW_TASK_')) return 'workflow tasks';
  if (name.startsWith('START_CHILD_') || name.startsWith('CHILD_WORKFLOW_')) return 'child workflow';
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
    // A request counts once in each service it passes (frontend, history, matching).
    const service = m[1] === 'service_requests' ? ` ${/service_name="([^"]+)"/.exec(m[2]!)?.[1] ?? '?'}` : '';
    const key = `${m[1]}${service} ${op}`;
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
  { name: 'upserts', workflow: 'primUpserts' },
  { name: 'patches', workflow: 'primPatches' },
  { name: 'activities', workflow: 'primActivities' },
  { name: 'parallel', workflow: 'primParallel' },
  { name: 'heartbeats', workflow: 'primHeartbeats' },
  { name: 'signals', workflow: 'primSignals', signals: true },
  { name: 'children', workflow: 'primChildren' },
];

/** What one of each costs the server, ms of CPU (from the primitives, see `price`). */
export interface Prices {
  'workflow start, one task, completion': number;
  'workflow task': number;
  activity: number;
  signal: number;
  'state upsert': number;
  'patch (a marker and its upsert)': number;
  'awaited heartbeat': number;
  'child workflow start and result (beside its run and the tasks they wake)': number;
}

const completedTasks = (events: HistoryEvent[]): number =>
  events.filter((e) => e.workflowTaskCompletedEventAttributes).length;

/** Server CPU ms per run of `workflow(n)`, over `runs` runs one after the other, and the workflow tasks of one run. */
async function primitiveCost(
  c: OpenWorkerClient,
  serverPid: number,
  p: Primitive,
  n: number,
  runs: number,
): Promise<{ ms: number; tasks: number }> {
  let seq = 0;
  let last = '';
  const once = async () => {
    const id = `prim-${p.workflow}-${n}-${Date.now()}-${++seq}`;
    last = id;
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
  const ms = (cpuMs(serverPid) - cpu0) / runs;
  const tasks = completedTasks((await c.client.workflow.getHandle(last).fetchHistory()).events ?? []);
  return { ms, tasks };
}

/**
 * The prices, from each primitive's slope (n = PRIM_N against n = 0). A workflow task and an activity
 * come apart through activities run one after the other (n tasks) and all at once (fewer: their
 * results share tasks); a signal's and a child's price leave out the tasks they wake.
 */
async function price(c: OpenWorkerClient, serverPid: number): Promise<Prices> {
  const slope: Record<string, { ms: number; tasks: number }> = {};
  const bare = await primitiveCost(c, serverPid, { name: 'bare', workflow: 'primBare' }, 0, TURNS);
  for (const p of PRIMITIVES) {
    const zero = await primitiveCost(c, serverPid, p, 0, TURNS);
    const many = await primitiveCost(c, serverPid, p, PRIM_N, TURNS);
    slope[p.name] = { ms: (many.ms - zero.ms) / PRIM_N, tasks: (many.tasks - zero.tasks) / PRIM_N };
    console.log(`breakdown: ${p.workflow}: ${slope[p.name]!.ms.toFixed(2)} ms, ${slope[p.name]!.tasks} tasks each`);
  }
  const [seq, par] = [slope.activities!, slope.parallel!];
  const task = (seq.ms - par.ms) / (seq.tasks - par.tasks);
  const beside = (x: { ms: number; tasks: number }) => x.ms - x.tasks * task;
  return {
    'workflow start, one task, completion': bare.ms,
    'workflow task': task,
    activity: beside(seq),
    signal: beside(slope.signals!),
    'state upsert': slope.upserts!.ms,
    'patch (a marker and its upsert)': slope.patches!.ms,
    'awaited heartbeat': slope.heartbeats!.ms,
    'child workflow start and result (beside its run and the tasks they wake)': beside(slope.children!) - bare.ms,
  };
}

/**
 * Turn `turn` of a session, as a user runs it: the message to the session, which starts the turn as
 * its child; the approval goes to the turn as soon as it exists (a refused signal costs the server a
 * lookup, no more); done when the turn has returned.
 */
async function sessionTurn(c: OpenWorkerClient, sessionId: string, turn: number, shape: TurnShape): Promise<void> {
  await sendMessage(c, { sessionId, text: benchMessage(shape) });
  const handle = c.client.workflow.getHandle(turnWorkflowId(sessionId, turn));
  // The bench model numbers a response's calls by the assistant messages before it: two a turn.
  const ids = callIdsFor(2 * (turn - 1), shape.steps[0]?.k ?? 0);
  for (;;) {
    try {
      if (ids.length === 1) await handle.signal(approveSignal, { toolCallId: ids[0]!, by: 'bench' });
      else
        await handle.signal(decisionsSignal, {
          decisions: ids.map((toolCallId) => ({ kind: 'approve' as const, toolCallId, by: 'bench' })),
        });
      break;
    } catch {
      await sleep(5); // not started yet
    }
  }
  await handle.result();
}

interface TurnRow {
  system: string;
  k: number;
  serverCpuMs: number;
  workerCpuMs: number;
  events: number;
  /** Workflow tasks completed per turn (the session's too, for a turn through it). */
  tasks: number;
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
    const prices = await price(c, server.pid);

    /** TURNS turns one at a time after 3 to warm up: server and worker CPU, server requests, history by cause. */
    const cell = async (
      system: string,
      k: number,
      worker: 'b1' | 'b3',
      run: (i: number) => Promise<string>,
      session?: string,
    ): Promise<TurnRow> => {
      for (let i = 0; i < 3; i++) await run(i);
      await sleep(500); // a session has recorded the last warm turn
      const before = await serverCounters(metricsPort);
      const cpu0 = { server: cpuMs(server.pid), worker: cpuMs(pidOf(worker)) };
      const ids: string[] = [];
      for (let i = 3; i < TURNS + 3; i++) ids.push(await run(i));
      await sleep(500);
      const serverCpuMs = (cpuMs(server.pid) - cpu0.server) / TURNS;
      const workerCpuMs = (cpuMs(pidOf(worker)) - cpu0.worker) / TURNS;
      const counters = diff(before, await serverCounters(metricsPort), TURNS);
      const row: TurnRow = { system, k, serverCpuMs, workerCpuMs, events: 0, tasks: 0, byCause: {}, counters };
      const add = (events: HistoryEvent[], share: number, as?: string) => {
        row.events += events.length * share;
        row.tasks += completedTasks(events) * share;
        for (const [cause, n] of Object.entries(eventsByCause(events))) {
          const key = as ? `${as}: ${cause}` : cause;
          row.byCause[key] = (row.byCause[key] ?? 0) + n * share;
        }
      };
      for (const id of ids) add((await c.client.workflow.getHandle(id).fetchHistory()).events ?? [], 1 / TURNS);
      // The session's events per turn: its one run (no continue-as-new within these turns).
      if (session)
        add((await c.client.workflow.getHandle(session).fetchHistory()).events ?? [], 1 / (TURNS + 3), 'session');
      console.log(
        `breakdown: ${system} k=${k}: server ${serverCpuMs.toFixed(1)} ms/turn, ${row.events.toFixed(1)} events`,
      );
      return row;
    };

    // 2. Turns, one at a time: B1 and B3, one and three protected calls in one response; then B3's
    // through a session (one session a cell, turn after turn), for what the session↔turn hand-off adds.
    const rows: TurnRow[] = [];
    const stamp = Date.now();
    for (const k of [1, 3]) {
      const shape = { steps: calls(k, 'noop'), latencyMs: 0 };
      for (const family of ['b1', 'b3'] as const)
        rows.push(
          await cell(family.toUpperCase(), k, family, async (i) => {
            const id = `turn-${family}-${k}-${stamp}-${i}`;
            await temporalTurn(c, family, id, shape);
            return id;
          }),
        );
      const sessionId = `breakdown-${k}-${stamp}`;
      rows.push(
        await cell(
          'B3 via session',
          k,
          'b3',
          async (i) => {
            await sessionTurn(c, sessionId, i + 1, shape);
            return turnWorkflowId(sessionId, i + 1);
          },
          sessionWorkflowId(sessionId),
        ),
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
function report(prices: Prices, rows: TurnRow[]): string {
  const out: string[] = [`# Where the server's time goes (${TURNS} turns a cell, one at a time)`, ''];
  out.push('| primitive | server CPU ms |', '|---|---|');
  for (const [name, ms] of Object.entries(prices)) out.push(`| ${name} | ${ms.toFixed(2)} |`);
  const cols = rows.map((r) => `${r.system} k=${r.k}`);
  const causes = [...new Set(rows.flatMap((r) => Object.keys(r.byCause)))];
  out.push('', `| events per turn, by cause | ${cols.join(' | ')} |`, `|---|${cols.map(() => '---').join('|')}|`);
  for (const cause of causes) out.push(`| ${cause} | ${rows.map((r) => f1(r.byCause[cause])).join(' | ')} |`);
  out.push(`| **all** | ${rows.map((r) => f1(r.events)).join(' | ')} |`);
  out.push(`| workflow tasks | ${rows.map((r) => f1(r.tasks)).join(' | ')} |`);
  const ops = [...new Set(rows.flatMap((r) => Object.keys(r.counters)))].filter(
    (k) => !/Poll|GetSystemInfo|DescribeNamespace|GetNamespace|ListClusterMetadata|GetClusterMetadata/.test(k),
  );
  out.push('', `| server requests per turn | ${cols.join(' | ')} |`, `|---|${cols.map(() => '---').join('|')}|`);
  for (const op of ops) out.push(`| ${op} | ${rows.map((r) => f1(r.counters[op])).join(' | ')} |`);
  out.push('', `| server CPU ms per turn, priced | ${cols.join(' | ')} |`, `|---|${cols.map(() => '---').join('|')}|`);
  const heartbeats = (r: TurnRow) => r.counters['service_requests frontend RecordActivityTaskHeartbeat'] ?? 0;
  const count = (r: TurnRow, cause: string) => (r.byCause[cause] ?? 0) + (r.byCause[`session: ${cause}`] ?? 0);
  const activities = (r: TurnRow) => (count(r, 'model activities') + count(r, 'tool activities')) / 3; // scheduled, started, completed
  const priced: [string, (r: TurnRow) => number][] = [
    ['start, first task, completion', () => prices['workflow start, one task, completion']],
    ['further workflow tasks', (r) => (r.tasks - 1) * prices['workflow task']],
    ['activities', (r) => activities(r) * prices.activity],
    ['signals', (r) => count(r, 'signals') * prices.signal],
    ['state upserts', (r) => count(r, 'state upserts') * prices['state upsert']],
    [
      'patch markers',
      (r) => (count(r, 'patch markers and their upserts') / 2) * prices['patch (a marker and its upsert)'],
    ],
    ['awaited heartbeats (dispatch marker)', (r) => heartbeats(r) * prices['awaited heartbeat']],
    [
      "the turn's start and result as a child",
      (r) =>
        r.byCause['session: child workflow']
          ? prices['child workflow start and result (beside its run and the tasks they wake)']
          : 0,
    ],
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
