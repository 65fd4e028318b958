import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { WorkflowHandle } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { connectClient } from '../client/connection';
import { startDevServer } from '../dev/server';
import { defaultDataConverter } from '../runtime/dataConverter';
import { approveSignal, turnStatusQuery } from '../workflows/definitions';
import { sleep, startTurn, within } from './durability';
import type { HistoryEvent } from './events';
import { eventMs, eventName } from './events';
import { killHard, rssMiB, startBenchWorker } from './procs';

// Where a flood of signals to one workflow breaks the worker: per-signal workflow-task time as the
// count grows, the worker's RSS, the query time, and whether the worker survives.
// node dist/bench/floodRepro.js --target noop|turn --signals N

const arg = (name: string, dflt: string): string =>
  process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1]! : dflt;

/** A worker process for the no-op workflow, with createWorker's cache and sticky settings. */
async function noopWorker(taskQueue: string): Promise<void> {
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! }),
    taskQueue,
    workflowsPath: require.resolve('./floodNoopWorkflow'),
    dataConverter: defaultDataConverter(),
    stickyQueueScheduleToStartTimeout: '1s',
    maxCachedWorkflows: 100,
    // REPRO_ISOLATE=60s: createWorker's setting; unset: the SDK's default (5 s).
    ...(process.env.REPRO_ISOLATE ? { isolateExecutionTimeout: process.env.REPRO_ISOLATE } : {}),
  });
  const running = worker.run();
  console.log('BENCH_WORKER_READY');
  process.once('SIGTERM', () => worker.shutdown());
  await running;
}

function spawnNoopWorker(taskQueue: string): Promise<{ pid: number; kill(): void; dead: () => boolean }> {
  const proc = spawn(
    process.execPath,
    [
      ...(process.env.REPRO_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.REPRO_PROF}`] : []),
      __filename,
      'worker',
      taskQueue,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let exited = false;
  proc.once('exit', (code, sig) => {
    exited = true;
    console.log(`repro: noop worker exited (${code ?? sig})`);
  });
  return new Promise((resolve) =>
    createInterface({ input: proc.stdout! }).on('line', (l) => {
      if (l === 'BENCH_WORKER_READY')
        resolve({
          pid: proc.pid!,
          kill: () => proc.kill(process.env.REPRO_PROF ? 'SIGTERM' : 'SIGKILL'),
          dead: () => exited,
        });
    }),
  );
}

/** Workflow tasks of a history: signals delivered in each, and the worker's time on it. */
function tasks(evs: HistoryEvent[]): { signalsBefore: number; signals: number; ms: number; outcome: string }[] {
  const out: { signalsBefore: number; signals: number; ms: number; outcome: string }[] = [];
  let total = 0;
  let pending = 0;
  let started: HistoryEvent | undefined;
  for (const e of evs) {
    const name = eventName(e);
    if (name === 'WORKFLOW_EXECUTION_SIGNALED') pending++;
    else if (name === 'WORKFLOW_TASK_STARTED') started = e;
    else if (started && /^WORKFLOW_TASK_(COMPLETED|FAILED|TIMED_OUT)$/.test(name)) {
      const f = e.workflowTaskFailedEventAttributes;
      const outcome = f ? `FAILED ${String(f.cause)} ${f.failure?.message?.slice(0, 80) ?? ''}` : name.slice(14);
      out.push({ signalsBefore: total, signals: pending, ms: eventMs(e) - eventMs(started), outcome });
      total += pending;
      pending = 0;
      started = undefined;
    }
  }
  return out;
}

/** N signals sent while no worker runs, then one worker takes them all in one activation. */
async function backlog(c: Awaited<ReturnType<typeof connectClient>>, target: string, N: number): Promise<void> {
  const taskQueue = `backlog-${target}-${N}`;
  let h: WorkflowHandle;
  if (target === 'noop') h = await c.client.workflow.start('floodNoop', { taskQueue, workflowId: `backlog-noop-${N}` });
  else {
    const first = await startBenchWorker({ system: 'b3', taskQueue });
    h = await startTurn(c, taskQueue, `backlog-${N}`, 'effect', false);
    while ((await h.query(turnStatusQuery)).state !== 'awaiting_approval') await sleep(100);
    await killHard(first);
  }
  for (let i = 0; i < N; i += 50)
    await Promise.all(
      Array.from({ length: Math.min(50, N - i) }, (_, k) =>
        h.signal(approveSignal, { toolCallId: `no-such-call-${i + k}`, by: 'flood' }),
      ),
    );
  const t0 = Date.now();
  let dead = () => false;
  let stop = () => {};
  let pid = 0;
  if (target === 'noop') {
    const w = await spawnNoopWorker(taskQueue);
    [dead, stop, pid] = [w.dead, w.kill, w.pid];
  } else {
    const w = await startBenchWorker({ system: 'b3', taskQueue });
    let gone = false;
    void w.exited.then(() => (gone = true));
    [dead, stop, pid] = [() => gone, () => void killHard(w), w.pid];
  }
  const ready = Date.now() - t0;
  const query = (): Promise<unknown> => (target === 'noop' ? h.query('count') : h.query(turnStatusQuery));
  const answered = await within(query(), 120_000, 'query').then(
    () => true,
    (e: Error) => (console.log(`repro: ${e.message}`), false),
  );
  const rss = dead() ? NaN : Math.round(rssMiB(pid));
  const evs = (await h.fetchHistory()).events ?? [];
  const ts = tasks(evs);
  const last = ts[ts.length - 1];
  console.log(
    `repro: backlog ${target} N=${N}: worker ready ${ready} ms, query ${answered ? 'answered' : 'FAILED'} ${Date.now() - t0 - ready} ms after, RSS ${rss} MiB, worker ${dead() ? 'DEAD' : 'alive'}; last task: ${JSON.stringify(last)}`,
  );
  stop();
}

async function main(): Promise<void> {
  const target = arg('--target', 'noop');
  const N = Number(arg('--signals', '10300'));
  const dir = mkdtempSync(join(tmpdir(), 'openworker-repro-'));
  const server = await startDevServer({ port: 0, headless: true, dbFile: join(dir, 'temporal.db') });
  process.env.TEMPORAL_ADDRESS = server.address;
  process.env.OPENWORKER_PAYLOAD_STORE = join(dir, 'payloads');
  const taskQueue = `repro-${target}`;
  const c = await connectClient({ address: server.address, taskQueue });
  if (process.argv.includes('--backlog')) {
    try {
      for (const n of arg('--backlog', '1000').split(',').map(Number)) await backlog(c, target, n);
    } finally {
      await c.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
    return;
  }
  let w: { pid: number; kill(): void; dead: () => boolean };
  let h: WorkflowHandle;
  if (target === 'noop') {
    w = await spawnNoopWorker(taskQueue);
    h = await c.client.workflow.start('floodNoop', { taskQueue, workflowId: 'flood-noop' });
  } else {
    const bw = await startBenchWorker({ system: 'b3', taskQueue });
    let dead = false;
    void bw.exited.then(() => (dead = true));
    w = { pid: bw.pid, kill: () => void killHard(bw), dead: () => dead };
    h = await startTurn(c, taskQueue, 'flood', 'effect', false);
    while ((await h.query(turnStatusQuery)).state !== 'awaiting_approval') await sleep(100);
  }
  const query = (): Promise<unknown> => (target === 'noop' ? h.query('count') : h.query(turnStatusQuery));
  const rss: string[] = [];
  let refused = 0;
  let why = '';
  try {
    for (let i = 0; i < N; i += 50) {
      await Promise.all(
        Array.from({ length: Math.min(50, N - i) }, (_, k) =>
          h.signal(approveSignal, { toolCallId: `no-such-call-${i + k}`, by: 'flood' }).catch((e: Error) => {
            refused++;
            why ||= `${e.message.split('\n')[0]!} (${String((e as { cause?: Error }).cause?.message ?? '')})`;
          }),
        ),
      );
      if ((i + 50) % 1000 === 0 && !w.dead()) rss.push(`${i + 50}:${Math.round(rssMiB(w.pid))}`);
    }
    await sleep(3000);
    const t0 = Date.now();
    const answered = await within(query(), 60_000, 'query').then(
      () => true,
      (e: Error) => (console.log(`repro: ${e.message}`), false),
    );
    console.log(`repro: ${target}: query ${answered ? 'answered' : 'FAILED'} in ${Date.now() - t0} ms`);
    console.log(`repro: refused ${refused}: ${why}`);
    console.log(`repro: worker RSS MiB by signals sent: ${rss.join(' ')}; worker ${w.dead() ? 'DEAD' : 'alive'}`);
    const evs = (await h.fetchHistory()).events ?? [];
    const ts = tasks(evs);
    const buckets = new Map<number, { tasks: number; signals: number; ms: number; maxMs: number; bad: number }>();
    for (const t of ts) {
      const k = Math.floor(t.signalsBefore / 1000) * 1000;
      const b = buckets.get(k) ?? { tasks: 0, signals: 0, ms: 0, maxMs: 0, bad: 0 };
      b.tasks++;
      b.signals += t.signals;
      b.ms += t.ms;
      b.maxMs = Math.max(b.maxMs, t.ms);
      if (t.outcome !== 'COMPLETED') b.bad++;
      buckets.set(k, b);
    }
    console.table(
      [...buckets.entries()].map(([from, b]) => ({
        from,
        ...b,
        msPerSignal: +(b.ms / Math.max(b.signals, 1)).toFixed(3),
        signalsPerTask: +(b.signals / b.tasks).toFixed(1),
      })),
    );
    const outcomes = new Map<string, number>();
    for (const t of ts) outcomes.set(t.outcome, (outcomes.get(t.outcome) ?? 0) + 1);
    console.log(`repro: history ${evs.length} events; task outcomes:`, Object.fromEntries(outcomes));
  } finally {
    w.kill();
    await c.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'worker')
  noopWorker(process.argv[3]!).catch((err) => {
    console.error(err);
    process.exit(1);
  });
else
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
