import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { createRegistry } from '../activities/registry';
import { connectClient } from '../client/connection';
import type { OpenWorkerClient } from '../client/connection';
import { DYNAMIC_CONFIG, startDevServer } from '../dev/server';
import { approveSignal, decisionsSignal } from '../workflows/definitions';
import { runTurnInProcess } from './loop';
import { crashToRecovery } from './crash';
import type { CrashResult } from './crash';
import { parkedTurns } from './parked';
import type { ParkedRow } from './parked';
import { scaleOut } from './scaleOut';
import type { ScaleOutResult } from './scaleOut';
import { eventMs, eventName } from './events';
import { freePort, killHard, scrapeHistograms, startBenchWorker } from './procs';
import type { BenchWorker } from './procs';
import type { RunResult } from './report';
import { cells, durabilityMarkdown, markdownTable, maxOf, percentile, svgChart } from './report';
import type { BenchTool } from './workload';
import { benchMessage, benchModel, benchTools, callIdsFor } from './workload';

// npm run bench [-- --quick] [--out dir]: B0 (in-process), B2 (naive Temporal) and B3 (ours) on one
// fresh file-backed dev server, interleaved, same model, same tools, an automatic approver.

const ROOT = join(__dirname, '..', '..');
const QUICK = process.argv.includes('--quick');
const OUT = process.argv.includes('--out')
  ? process.argv[process.argv.indexOf('--out') + 1]!
  : join(ROOT, 'bench-results');
/** `--dynamic KEY=JSON` (repeatable): server dynamic config for a variant, e.g. system.enableActivityEagerExecution=true. */
const DYNAMIC: Record<string, unknown> = Object.fromEntries(
  process.argv
    .flatMap((a, i) => (a === '--dynamic' ? [process.argv[i + 1]!] : []))
    .map((kv) => [kv.slice(0, kv.indexOf('=')), JSON.parse(kv.slice(kv.indexOf('=') + 1))]),
);
const CONFIG = QUICK
  ? {
      ns: [1, 8],
      seconds: 1.5,
      rounds: 1,
      workloads: [
        [0, 'noop'],
        [1, 'noop'],
        [3, 'noop'],
        [1, 'sleep50'],
      ] as [number, BenchTool][],
    }
  : {
      ns: [1, 8, 32],
      seconds: 5,
      rounds: 3,
      workloads: [
        [0, 'noop'],
        [1, 'noop'],
        [3, 'noop'],
        [1, 'sleep50'],
        [3, 'sleep50'],
      ] as [number, BenchTool][],
    };

/** `--only main,parked,crash,scale`: which parts to run (default all). */
const PARTS = new Set(
  process.argv.includes('--only')
    ? process.argv[process.argv.indexOf('--only') + 1]!.split(',')
    : ['main', 'parked', 'crash', 'scale'],
);
const WFT_METRICS = [
  'temporal_workflow_task_execution_latency',
  'temporal_workflow_task_schedule_to_start_latency',
  'temporal_workflow_task_replay_latency',
  'temporal_activity_execution_latency',
] as const;

const SYSTEMS = [
  'B0 in-process',
  'B2 naive Temporal',
  'B3 ours (signal-approved)',
  'B3 ours (auto-approved read)',
] as const;
type System = (typeof SYSTEMS)[number];

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim() || 100);
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS; // utime, stime
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'openworker-bench-'));
  const server = await startDevServer({
    port: 0,
    headless: true,
    dbFile: join(dir, 'temporal.db'),
    dynamicConfig: DYNAMIC,
  });
  process.env.TEMPORAL_ADDRESS = server.address;
  process.env.OPENWORKER_PAYLOAD_STORE = join(dir, 'payloads');
  const procs: BenchWorker[] = [];
  let c: OpenWorkerClient | undefined;
  try {
    const metricsPorts = { b2: await freePort(), b3: await freePort() };
    const b2 = await startBenchWorker({
      system: 'b2',
      taskQueue: 'bench-b2',
      env: { BENCH_METRICS_PORT: String(metricsPorts.b2) },
    });
    const b3 = await startBenchWorker({
      system: 'b3',
      taskQueue: 'bench-b3',
      env: { BENCH_METRICS_PORT: String(metricsPorts.b3) },
    });
    procs.push(b2, b3);
    c = await connectClient({ address: server.address, taskQueue: 'bench-b3' });
    const model = benchModel();
    const registry = createRegistry(benchTools);
    let seq = 0;
    const turn = async (system: System, k: number, tool: BenchTool): Promise<string | undefined> => {
      const id = `bench-${++seq}`;
      const message = benchMessage(k, system === 'B3 ours (auto-approved read)' ? 'noop_read' : tool);
      if (system === 'B0 in-process') return void (await runTurnInProcess(model, registry, message));
      if (system === 'B2 naive Temporal')
        return void (await c!.client.workflow.execute('naiveTurn', {
          taskQueue: 'bench-b2',
          workflowId: id,
          args: [message],
        }));
      const handle = await c!.client.workflow.start('agentTurn', {
        taskQueue: 'bench-b3',
        workflowId: id,
        args: [{ sessionId: id, turn: 1, history: [], message }],
      });
      // The automatic approver: one signal per turn (a response's calls in one `decisions` signal),
      // sent at once; approvals wait in the turn for the calls they name.
      const ids = callIdsFor(0, k);
      if (system === 'B3 ours (signal-approved)' && ids.length === 1)
        await handle.signal(approveSignal, { toolCallId: ids[0]!, by: 'bench' });
      if (system === 'B3 ours (signal-approved)' && ids.length > 1)
        await handle.signal(decisionsSignal, {
          decisions: ids.map((toolCallId) => ({ kind: 'approve' as const, toolCallId, by: 'bench' })),
        });
      await handle.result();
      return id;
    };
    const pidOf = (s: System): number | undefined =>
      s === 'B2 naive Temporal' ? b2.pid : s.startsWith('B3') ? b3.pid : undefined;

    const runs: RunResult[] = [];
    const samples = new Map<string, string[]>();
    let workerTasks: Record<string, Record<string, { sum: number; count: number }>> = {};
    if (PARTS.has('main')) {
      const before = {
        b2: await scrapeHistograms(metricsPorts.b2, WFT_METRICS),
        b3: await scrapeHistograms(metricsPorts.b3, WFT_METRICS),
      };
      // Warm up every path (bundles, caches, connections) before measuring.
      for (const s of SYSTEMS) for (const [k, tool] of CONFIG.workloads) await turn(s, k, tool);

      const total = CONFIG.rounds * CONFIG.workloads.length * CONFIG.ns.length;
      let done = 0;
      for (let round = 1; round <= CONFIG.rounds; round++) {
        for (const [k, tool] of CONFIG.workloads) {
          for (const n of CONFIG.ns) {
            for (const system of SYSTEMS) {
              if (system === 'B3 ours (auto-approved read)' && (k === 0 || tool !== 'noop')) continue;
              const wpid = pidOf(system);
              const cpu0 = { server: cpuMs(server.pid), worker: wpid ? cpuMs(wpid) : 0, driver: cpuMs(process.pid) };
              const latencies: number[] = [];
              const ids: string[] = [];
              const t0 = Date.now();
              const deadline = t0 + CONFIG.seconds * 1000;
              await Promise.all(
                Array.from({ length: n }, async () => {
                  while (Date.now() < deadline) {
                    const s = performance.now();
                    const id = await turn(system, k, tool);
                    latencies.push(performance.now() - s);
                    if (id) ids.push(id);
                  }
                }),
              );
              const seconds = (Date.now() - t0) / 1000;
              const turns = latencies.length;
              const cpuPerTurn = {
                server: (cpuMs(server.pid) - cpu0.server) / turns,
                ...(wpid ? { worker: (cpuMs(wpid) - cpu0.worker) / turns } : {}),
                driver: (cpuMs(process.pid) - cpu0.driver) / turns,
              };
              runs.push({ system, k, tool, n, round, turns, seconds, latencies, cpuPerTurn });
              if (n === 1)
                samples.set(`${system}|${k}|${tool}`, [...(samples.get(`${system}|${k}|${tool}`) ?? []), ...ids]);
            }
            console.log(`bench: ${++done}/${total} k=${k} ${tool} N=${n} round ${round}`);
          }
        }
      }

      const after = {
        b2: await scrapeHistograms(metricsPorts.b2, WFT_METRICS),
        b3: await scrapeHistograms(metricsPorts.b3, WFT_METRICS),
      };
      workerTasks = Object.fromEntries(
        (['b2', 'b3'] as const).map((w) => [
          w,
          Object.fromEntries(
            WFT_METRICS.map((m) => [
              m,
              { sum: after[w][m]!.sum - before[w][m]!.sum, count: after[w][m]!.count - before[w][m]!.count },
            ]),
          ),
        ]),
      );
    }
    await killHard(b2);
    await killHard(b3);

    // Metrics 4–6: parked turns, crash to recovery_required, scale-out with a worker lost.
    const parked: ParkedRow[] | undefined = PARTS.has('parked') ? await parkedTurns(c, QUICK) : undefined;
    const crash: CrashResult | undefined = PARTS.has('crash')
      ? await crashToRecovery(c, QUICK ? 3 : 20, join(dir, 'effects-crash.log'))
      : undefined;
    const scale: ScaleOutResult[] = [];
    if (PARTS.has('scale')) {
      for (const workers of QUICK ? [2] : [2, 3]) {
        scale.push(
          await scaleOut(c, {
            workers,
            sessions: QUICK ? 8 : 16,
            seconds: QUICK ? 12 : 30,
            effectsFile: join(dir, `effects-scale-${workers}.log`),
          }),
        );
      }
    }

    const history = marginalEvents(await historyCosts(c, samples));
    const cs = cells(runs);
    const added = addedLatency(runs);
    const env = fingerprint(server.cliPath);
    mkdirSync(OUT, { recursive: true });
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    writeFileSync(
      join(OUT, `bench-${stamp}.json`),
      JSON.stringify(
        {
          env,
          config: { ...CONFIG, quick: QUICK, systems: SYSTEMS, parts: [...PARTS] },
          cells: cs,
          added,
          history,
          workerTasks,
          parked,
          crash,
          scale,
          runs,
        },
        null,
        2,
      ),
    );
    const md = [report(env, cs, added, history, workerTasks), durabilityMarkdown(parked, crash, scale)].join('\n');
    writeFileSync(join(OUT, 'latest.md'), md);
    if (runs.length)
      writeFileSync(
        join(OUT, 'latest.svg'),
        svgChart(
          cs.filter((x) => x.k === 1 && x.tool === 'noop'),
          SYSTEMS,
          'one tool call per turn (noop), closed loop, N concurrent sessions',
        ),
      );
    console.log(md);
    console.log(`bench: results in ${OUT} (bench-${stamp}.json, latest.md, latest.svg)`);
  } finally {
    for (const p of procs) await killHard(p);
    await c?.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Added latency per tool call against B0, from turn latencies at N=1 (see the method in latest.md). */
function addedLatency(runs: readonly RunResult[]): Record<string, { p50: number; p99: number; max: number }> {
  const lat = (system: string, k: number, tool: string) =>
    runs.filter((r) => r.system === system && r.k === k && r.tool === tool && r.n === 1).flatMap((r) => r.latencies);
  const out: Record<string, { p50: number; p99: number; max: number }> = {};
  for (const system of SYSTEMS.slice(1)) {
    for (const tool of ['noop', 'sleep50']) {
      const one = lat(system, 1, tool);
      if (!one.length) continue;
      const b0 = percentile(lat('B0 in-process', 1, tool), 50);
      const zero =
        percentile(lat(system.startsWith('B3') ? 'B3 ours (signal-approved)' : system, 0, 'noop'), 50) -
        percentile(lat('B0 in-process', 0, 'noop'), 50);
      // What one tool call adds to a turn beyond its in-process cost and beyond the system's cost of a turn without calls.
      const perCall = one.map((l) => l - b0 - zero);
      out[`${system} · ${tool}`] = { p50: percentile(perCall, 50), p99: percentile(perCall, 99), max: maxOf(perCall) };
    }
  }
  return out;
}

/**
 * Events a call adds: a turn's first call also brings the second model call ((k=1) − (k=0)); each
 * further call of the same response adds ((k=3) − (k=1)) / 2.
 */
function marginalEvents(hs: HistoryCost[]): HistoryCost[] {
  const at = (system: string, k: number) =>
    hs.find((h) => h.workload.startsWith(`${system} · k=${k} ·`) && (k === 0 || h.workload.endsWith('noop')))
      ?.eventsPerTurn;
  const zero = at('B3 ours (signal-approved)', 0);
  return hs.map((h) => {
    const [system, kk] = h.workload.split(' · ');
    const k = Number(kk!.slice(2));
    const one = at(system!, 1);
    const three = at(system!, 3);
    if (k === 1 && one !== undefined && zero !== undefined)
      return { ...h, eventsPerCall: `${(one - zero).toFixed(1)} (first call, with its model call)` };
    if (k === 3 && one !== undefined && three !== undefined)
      return { ...h, eventsPerCall: `${((three - one) / 2).toFixed(1)} (each further call)` };
    return h;
  });
}

interface HistoryCost {
  workload: string;
  eventsPerTurn: number;
  bytesPerTurn: number;
  eventsPerCall?: string;
  /** Median time between consecutive events, by hop, over the sampled turns (ms). */
  hops: { hop: string; medianMs: number }[];
}

async function historyCosts(c: OpenWorkerClient, samples: Map<string, string[]>): Promise<HistoryCost[]> {
  const out: HistoryCost[] = [];
  for (const [key, ids] of samples) {
    const [system, k, tool] = key.split('|');
    if (!system!.startsWith('B3') || !ids.length) continue;
    const sample = ids.slice(0, 20);
    const hops = new Map<string, number[]>();
    let events = 0;
    let bytes = 0;
    for (const id of sample) {
      const h = await c.client.workflow.getHandle(id).fetchHistory();
      const evs = h.events ?? [];
      events += evs.length;
      bytes += temporal.api.history.v1.History.encode(h).finish().length;
      for (let i = 1; i < evs.length; i++) {
        const hop = `${eventName(evs[i - 1]!)} → ${eventName(evs[i]!)}`;
        hops.set(hop, [...(hops.get(hop) ?? []), eventMs(evs[i]!) - eventMs(evs[i - 1]!)]);
      }
    }
    out.push({
      workload: `${system} · k=${k} · ${Number(k) ? tool : '—'}`,
      eventsPerTurn: events / sample.length,
      bytesPerTurn: Math.round(bytes / sample.length),
      hops: [...hops]
        .map(([hop, v]) => ({ hop, medianMs: percentile(v, 50) }))
        .sort((a, b) => b.medianMs - a.medianMs)
        .slice(0, 8),
    });
  }
  return out;
}

function fingerprint(cliPath: string): Record<string, unknown> {
  const run = (cmd: string, args: string[]): string => {
    try {
      return execFileSync(cmd, args, { encoding: 'utf8', cwd: ROOT, timeout: 10_000 }).trim();
    } catch {
      return 'unknown';
    }
  };
  return {
    cpu: cpus()[0]?.model,
    cores: cpus().length,
    node: process.version,
    temporalCli: run(cliPath, ['--version']),
    dynamicConfig: { ...DYNAMIC_CONFIG, ...DYNAMIC },
    gitCommit: run('git', ['rev-parse', 'HEAD']),
    at: new Date().toISOString(),
  };
}

type Histograms = Record<string, Record<string, { sum: number; count: number }>>;

function report(
  env: Record<string, unknown>,
  cs: ReturnType<typeof cells>,
  added: ReturnType<typeof addedLatency>,
  history: HistoryCost[],
  tasks: Histograms,
): string {
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '—');
  return [
    `# openworker-temporal benchmark${QUICK ? ' (--quick)' : ''}`,
    '',
    `${env.cpu} × ${env.cores} cores, Node ${env.node}, ${String(env.temporalCli).split('\n')[0]}, commit ${String(env.gitCommit).slice(0, 10)}, ${env.at}.`,
    `Closed loop: N concurrent sessions, each starting its next turn when the last one ends, ${CONFIG.seconds} s per run, ${CONFIG.rounds} interleaved round(s); latency is the client's wall time from start to result; CPU is /proc utime+stime per process over the run, divided by turns.`,
    '',
    markdownTable(cs, SYSTEMS),
    '',
    "**Added latency per tool call vs B0** (N=1): per turn with one call, its latency minus B0's median for the same turn, minus the system's own median overhead for a turn without calls.",
    '',
    '| system · tool | p50 ms | p99 ms | max ms |',
    '|---|---|---|---|',
    ...Object.entries(added).map(([k, v]) => `| ${k} | ${f(v.p50)} | ${f(v.p99)} | ${f(v.max)} |`),
    '',
    '**History per turn** (20 sampled B3 turns at N=1, `fetchHistory`; bytes = the encoded History proto):',
    '',
    '| workload | events/turn | bytes/turn | events per call | slowest hops (median ms between server event timestamps) |',
    '|---|---|---|---|---|',
    ...history.map(
      (h) =>
        `| ${h.workload} | ${f(h.eventsPerTurn)} | ${h.bytesPerTurn} | ${h.eventsPerCall ?? '—'} | ${h.hops
          .slice(0, 4)
          .map((x) => `${x.hop} ${x.medianMs}`)
          .join('; ')} |`,
    ),
    '',
    "**Inside the worker** (the SDK's own histograms, scraped from each worker's Prometheus endpoint over the whole matrix): mean ms per task.",
    '',
    '| worker | workflow tasks | execution | schedule-to-start | activity execution |',
    '|---|---|---|---|---|',
    ...Object.entries(tasks).map(([w, m]) => {
      const mean = (name: string) => (m[name]?.count ? f(m[name]!.sum / m[name]!.count) : '—');
      return `| ${w} | ${m.temporal_workflow_task_execution_latency?.count ?? 0} | ${mean('temporal_workflow_task_execution_latency')} | ${mean('temporal_workflow_task_schedule_to_start_latency')} | ${mean('temporal_activity_execution_latency')} |`;
    }),
    '',
  ].join('\n');
}

main().catch((err) => {
  console.error(`bench: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
