import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitingCalls } from '../apps/approvals/calls';
import { connectClient } from '../client/connection';
import type { OpenWorkerClient } from '../client/connection';
import { inbox } from '../client/inspect';
import { startDevServer } from '../dev/server';
import { inboxRows } from '../workflows/inboxRows';
import type { TurnStatus } from '../workflows/types';
import { sleep, startTurn, within } from './durability';
import { cpuMs } from './matrix';
import { freePort, killHard, startBenchWorker } from './procs';
import type { Spread } from './report';
import { spreadOf } from './report';

// npm run bench:inbox [turns]: the inbox with many parked calls (default 10,000), listed from
// visibility alone (each turn's memo, workflows/inboxRows.ts). Measures the inbox's wall time over
// REFRESHES refreshes, the queries the server received meanwhile (QueryWorkflow at the frontend),
// and the worker's CPU while an approvals page refreshes every 2 s. At CONTRAST parked calls it
// also times the old path (list, then one `status` query per waiting turn) for comparison.

const TASK_QUEUE = 'bench-inbox';
const REFRESHES = 20;
const CONTRAST = 300;
const PAGE_SECONDS = 30;
const FIRST_PAGE = 1000;

/** The server's frontend QueryWorkflow count (its counters are reported every second). */
async function queriesAtServer(port: number): Promise<number> {
  await sleep(2500);
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return text
    .split('\n')
    .filter(
      (l) =>
        l.startsWith('service_requests{') &&
        l.includes('operation="QueryWorkflow"') &&
        l.includes('service_name="frontend"'),
    )
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** The inbox as it was before inbox-memo-v1: list, then ask every waiting turn (8 at a time). */
async function queriedInbox(c: OpenWorkerClient): Promise<number> {
  const listed: string[] = [];
  const q = `ExecutionStatus = "Running" AND OpenWorkerState IN ("awaiting_approval", "recovery_required", "awaiting_answer")`;
  for await (const wf of c.client.workflow.list({ query: q })) listed.push(wf.workflowId);
  let rows = 0;
  for (let i = 0; i < listed.length; i += 8)
    await Promise.all(
      listed.slice(i, i + 8).map(async (id) => {
        const s = await c.client.workflow.getHandle(id).query<TurnStatus>('status');
        rows += inboxRows(s.ledger, s.decisions).length;
      }),
    );
  return rows;
}

async function timed(times: number, fn: () => Promise<number>, expect: number, what: string): Promise<Spread> {
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const t0 = performance.now();
    const n = await fn();
    ms.push(performance.now() - t0);
    if (n !== expect) throw new Error(`bench: ${what} listed ${n} calls, expected ${expect}`);
  }
  return spreadOf(ms);
}

async function main(): Promise<void> {
  const total = Number(process.argv[2] ?? 10_000);
  if (!Number.isInteger(total) || total < CONTRAST)
    throw new Error(`bench:inbox: turns must be an integer of at least ${CONTRAST}, got ${process.argv[2]}`);
  const dir = mkdtempSync(join(tmpdir(), 'openworker-inbox-bench-'));
  const metricsPort = await freePort();
  const server = await startDevServer({ port: 0, headless: true, dbFile: join(dir, 'temporal.db'), metricsPort });
  process.env.TEMPORAL_ADDRESS = server.address;
  process.env.OPENWORKER_PAYLOAD_STORE = join(dir, 'payloads');
  const c = await connectClient({ address: server.address, taskQueue: TASK_QUEUE });
  // The worker's default cache: most parked turns are evicted, as on a real worker holding many.
  const worker = await startBenchWorker({ system: 'b3', taskQueue: TASK_QUEUE });
  let parked = 0;
  const park = async (upTo: number): Promise<number> => {
    const t0 = Date.now();
    const from = parked;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (parked < upTo) await startTurn(c, TASK_QUEUE, `inbox-${++parked}`, 'noop', false);
      }),
    );
    const query = `TaskQueue="${TASK_QUEUE}" AND OpenWorkerState="awaiting_approval"`;
    await within(
      (async () => {
        while ((await c.client.workflow.count(query)).count < upTo) await sleep(1000);
      })(),
      60 * 60_000,
      `${upTo} turns parking`,
    );
    const perSec = (upTo - from) / ((Date.now() - t0) / 1000);
    console.error(`bench:inbox: ${upTo} parked (${perSec.toFixed(0)}/s)`);
    return perSec;
  };
  const listed = async () => (await inbox(c)).length;
  try {
    await park(CONTRAST);
    // The counter is checked on the old path: 5 refreshes must show 5 × CONTRAST queries.
    const qOld = await queriesAtServer(metricsPort);
    const oldAt = await timed(5, () => queriedInbox(c), CONTRAST, 'the queried inbox');
    const oldQueries = (await queriesAtServer(metricsPort)) - qOld;
    const newAt = await timed(REFRESHES, listed, CONTRAST, 'the inbox');
    const parkPerSec = await park(total);
    const q0 = await queriesAtServer(metricsPort);
    const big = await timed(REFRESHES, listed, total, 'the inbox');
    // One page of visibility: the newest FIRST_PAGE waiting turns (`inbox --limit`).
    const first = await timed(
      REFRESHES,
      async () => (await inbox(c, { limit: FIRST_PAGE })).length,
      FIRST_PAGE,
      'a page',
    );
    const queries = (await queriesAtServer(metricsPort)) - q0;

    // The worker with nothing asked of it, then while a page refreshes every 2 s (apps/approvals/app.ts).
    const w0 = cpuMs(worker.pid);
    await sleep(PAGE_SECONDS * 1000);
    const idleMs = cpuMs(worker.pid) - w0;
    const p0 = { worker: cpuMs(worker.pid), server: cpuMs(server.pid), driver: cpuMs(process.pid) };
    const q1 = await queriesAtServer(metricsPort);
    const until = Date.now() + PAGE_SECONDS * 1000;
    let refreshes = 0;
    while (Date.now() < until) {
      const t0 = Date.now();
      if ((await waitingCalls(c)).calls.length !== total) throw new Error('bench: the page listed the wrong count');
      refreshes++;
      await sleep(Math.max(0, 2000 - (Date.now() - t0)));
    }
    const pageMs = {
      worker: cpuMs(worker.pid) - p0.worker,
      server: cpuMs(server.pid) - p0.server,
      driver: cpuMs(process.pid) - p0.driver,
    };
    const pageQueries = (await queriesAtServer(metricsPort)) - q1;
    const pct = (ms: number) => `${((ms / (PAGE_SECONDS * 1000)) * 100).toFixed(1)} %`;
    const s = (x: Spread) => `${x.p50.toFixed(0)} / ${x.p99.toFixed(0)} ms`;
    console.log(
      [
        `| parked calls | path | inbox p50 / p99 | refreshes | queries to turns |`,
        `|---|---|---|---|---|`,
        `| ${CONTRAST} | before: list + one \`status\` query per turn | ${s(oldAt)} | 5 | ${oldQueries} |`,
        `| ${CONTRAST} | memo (visibility alone) | ${s(newAt)} | ${REFRESHES} | 0 |`,
        `| ${total} | memo (visibility alone) | ${s(big)} | ${REFRESHES} | ${queries} (with the next row) |`,
        `| ${total} | memo, \`limit: ${FIRST_PAGE}\` (one visibility page) | ${s(first)} | ${REFRESHES} | |`,
        '',
        `Parking: ${parkPerSec.toFixed(0)} turns/s. An approvals page refreshing every 2 s for ${PAGE_SECONDS} s (${refreshes} refreshes, ${pageQueries} queries): worker CPU ${pct(pageMs.worker)} (idle: ${pct(idleMs)}), server ${pct(pageMs.server)}, the app's process ${pct(pageMs.driver)}.`,
      ].join('\n'),
    );
    console.log(
      JSON.stringify({
        total,
        oldAt,
        oldQueries,
        newAt,
        big,
        queries,
        parkPerSec,
        idleMs,
        pageMs,
        refreshes,
        pageQueries,
      }),
    );
  } finally {
    await killHard(worker);
    await c.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err.message);
    process.exit(1);
  },
);
