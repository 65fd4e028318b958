import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectClient } from '../client/connection';
import type { OpenWorkerClient } from '../client/connection';
import { DYNAMIC_CONFIG, startDevServer } from '../dev/server';
import { addedLatency, comparisons, historyCosts } from './analysis';
import { B0, B3, CONFIG, DYNAMIC, ENCRYPT, OUT, PARTS, PAYLOADS, QUICK, ROOT, SYSTEMS } from './config';
import { crashToRecovery } from './crash';
import type { CrashResult } from './crash';
import { runMatrix } from './matrix';
import type { Histograms } from './matrix';
import { matrixMarkdown } from './matrixReport';
import { parkedTurns } from './parked';
import type { BenchPayloadStore } from './payloadStore';
import { startBenchPayloadStore } from './payloadStore';
import type { ParkedRow } from './parked';
import { freePort, killHard, startBenchWorker } from './procs';
import type { BenchWorker } from './procs';
import type { RunResult } from './report';
import { cells, durabilityMarkdown, svgChart } from './report';
import { scaleOut } from './scaleOut';
import type { ScaleOutResult } from './scaleOut';

// npm run bench [-- --quick] [--only …] [--ns …] [--out dir] [--payloads dir|s3] [--encrypt] (see config.ts): B0 (in-process), B1
// (idiomatic Temporal), B2 (naive Temporal) and B3 (ours) on one fresh file-backed dev server,
// interleaved, same model, same tools, an automatic approver; then the durability measurements.

/** How long each part took, s (in the JSON and on the console: what a part costs). */
const partSeconds: Record<string, number> = {};
async function timed<T>(part: string, f: () => Promise<T>): Promise<T> {
  const t0 = Date.now();
  try {
    return await f();
  } finally {
    partSeconds[part] = Math.round((Date.now() - t0) / 1000);
    console.log(`bench: ${part} took ${partSeconds[part]} s`);
  }
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
  const procs: BenchWorker[] = [];
  let c: OpenWorkerClient | undefined;
  let store: BenchPayloadStore | undefined;
  try {
    // The driver and every worker process (they inherit this environment) share the store and the keys.
    store = await startBenchPayloadStore(PAYLOADS, ENCRYPT, join(dir, 'payloads'));
    Object.assign(process.env, store.env);
    console.log(`bench: ${store.describe}`);
    const client = await connectClient({ address: server.address, taskQueue: 'bench-b3' });
    c = client;
    let runs: RunResult[] = [];
    let samples = new Map<string, string[]>();
    let workerTasks: Histograms = {};
    if (CONFIG.workloads.length) {
      const start = async (system: 'b1' | 'b2' | 'b3') => {
        const metricsPort = await freePort();
        const w = await startBenchWorker({
          system,
          taskQueue: `bench-${system}`,
          env: { BENCH_METRICS_PORT: String(metricsPort) },
        });
        procs.push(w);
        return { pid: w.pid, metricsPort };
      };
      const workers = { b1: await start('b1'), b2: await start('b2'), b3: await start('b3') };
      ({ runs, samples, workerTasks } = await timed(
        [...PARTS].filter((p) => CONFIG.workloads.some((w) => w.part === p)).join('+'),
        () => runMatrix(client, server.pid, workers, store),
      ));
      while (procs.length) await killHard(procs.pop()!);
    }

    // Turns parked on approval, crash to recovery_required, scale-out with a worker lost.
    const parked: ParkedRow[] | undefined = PARTS.has('parked')
      ? await timed('parked', () => parkedTurns(client, QUICK))
      : undefined;
    const crash: CrashResult | undefined = PARTS.has('crash')
      ? await timed('crash', () => crashToRecovery(client, QUICK ? 3 : 20, join(dir, 'effects-crash.log')))
      : undefined;
    const scale: ScaleOutResult[] = [];
    if (PARTS.has('scale')) {
      for (const workers of QUICK ? [2] : [2, 3]) {
        scale.push(
          await timed(`scale ${workers} → ${workers - 1}`, () =>
            scaleOut(client, {
              workers,
              sessions: QUICK ? 8 : 16,
              seconds: QUICK ? 12 : 30,
              effectsFile: join(dir, `effects-scale-${workers}.log`),
            }),
          ),
        );
      }
    }

    const history = await historyCosts(client, samples);
    const cs = cells(runs);
    const compared = comparisons(cs);
    const added = addedLatency(runs);
    const env = fingerprint(server.cliPath);
    mkdirSync(OUT, { recursive: true });
    // B0's in-process loop yields millions of samples a run (~140 MB of JSON); its cells keep the percentiles.
    const kept = runs.map(({ latencies, ...r }) =>
      r.system === B0 ? { ...r, samples: latencies.length } : { ...r, latencies },
    );
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    const config = { ...CONFIG, quick: QUICK, systems: SYSTEMS, parts: [...PARTS], partSeconds };
    writeFileSync(
      join(OUT, `bench-${stamp}.json`),
      JSON.stringify(
        {
          env,
          config,
          cells: cs,
          comparisons: compared,
          added,
          history,
          workerTasks,
          parked,
          crash,
          scale,
          runs: kept,
        },
        null,
        2,
      ),
    );
    const md = [
      `# openworker-temporal benchmark${QUICK ? ' (--quick)' : ''}`,
      '',
      `${env.cpu} × ${env.cores} cores, Node ${env.node}, ${String(env.temporalCli).split('\n')[0]}, commit ${String(env.gitCommit).slice(0, 10)}, ${env.at}.`,
      '',
      `Payload store: ${store.describe} (\`--payloads ${PAYLOADS}\`${ENCRYPT ? ' `--encrypt`' : ''}).`,
      ...(runs.length
        ? [
            matrixMarkdown({
              cells: cs,
              systems: SYSTEMS,
              comparisons: compared,
              added,
              history,
              workerTasks,
              seconds: CONFIG.seconds,
              rounds: CONFIG.rounds,
            }),
          ]
        : ['']),
      durabilityMarkdown(parked, crash, scale),
    ].join('\n');
    writeFileSync(join(OUT, 'latest.md'), md);
    const chart = cs.filter((x) => x.k === 1 && x.tool === 'noop' && x.latencyMs === 0);
    const charted = chart.some((x) => x.system === B3);
    if (charted)
      writeFileSync(
        join(OUT, 'latest.svg'),
        svgChart(chart, SYSTEMS, 'one tool call per turn (noop), closed loop, N concurrent sessions'),
      );
    console.log(md);
    console.log(`bench: results in ${OUT} (bench-${stamp}.json, latest.md${charted ? ', latest.svg' : ''})`);
  } finally {
    for (const p of procs) await killHard(p);
    await c?.close();
    await store?.stop();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
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

main().catch((err) => {
  console.error(`bench: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
