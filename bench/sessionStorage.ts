import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { z } from 'zod';
import { scriptedModel } from '../activities/models/scripted';
import { defineTool } from '../activities/tool';
import { connectClient } from '../client/connection';
import type { OpenWorkerClient } from '../client/connection';
import { sendMessage, sessionStatus, waitForTurn } from '../client/session';
import { startDevServer } from '../dev/server';
import { settingsFrom } from '../runtime/settings';
import { createWorker } from '../worker/worker';
import { utf8Bytes } from '../workflows/limits';
import type { PayloadsMode, StoreCounts } from './payloadStore';
import { startBenchPayloadStore } from './payloadStore';

// npm run bench:storage: the bytes one long session stores (every run's history plus the payload
// store) after n model calls, against the bytes of its transcript. Each turn is two model calls
// (a read, then an answer), shaped like the measurement (~2 KiB of transcript per call).

const CHECKPOINTS = (process.env.STORAGE_CALLS ?? '10,50,200').split(',').map(Number);

// STORAGE_SCALE=k: answers and lookups k times longer, to see what content costs beside Temporal's events.
const SCALE = Math.max(1, Number(process.env.STORAGE_SCALE ?? 1));

const ANSWER = (i: number) =>
  `Customer ${i} ordered three times recently. ` +
  'Totals, dates and the items of each order, summarised. '.repeat(12 * SCALE);

const lookup = defineTool({
  name: 'lookup',
  description: 'Look a customer up.',
  input: z.object({ customer: z.number() }),
  effect: 'read',
  execute: ({ customer }) => ({
    customer,
    orders: Array.from({ length: 6 * SCALE }, (_, k) => ({
      id: `o-${customer}-${k}`,
      total: 10 + k,
      note: 'x'.repeat(60),
    })),
  }),
});

/** Every run of the session and its turns: the encoded size of their histories. */
async function historyBytes(c: OpenWorkerClient, sessionId: string): Promise<number> {
  let total = 0;
  const byEvent = new Map<string, { bytes: number; n: number }>();
  for await (const wf of c.client.workflow.list({ query: `OpenWorkerSession = '${sessionId}'` })) {
    const history = await c.client.workflow.getHandle(wf.workflowId, wf.runId).fetchHistory();
    for (const e of history.events ?? []) {
      const bytes = temporal.api.history.v1.HistoryEvent.encode(e).finish().length;
      total += bytes;
      const key = `${wf.type} ${temporal.api.enums.v1.EventType[e.eventType ?? 0]?.replace('EVENT_TYPE_', '')}`;
      const seen = byEvent.get(key) ?? { bytes: 0, n: 0 };
      byEvent.set(key, { bytes: seen.bytes + bytes, n: seen.n + 1 });
    }
  }
  // STORAGE_BREAKDOWN=1: where the history bytes are, by workflow and event type.
  if (process.env.STORAGE_BREAKDOWN)
    for (const [key, { bytes, n }] of [...byEvent].sort((a, b) => b[1].bytes - a[1].bytes))
      console.log(`    ${key}: ${bytes} B in ${n} events`);
  return total;
}

const kib = (n: number) => (n / 1024).toFixed(0);

// STORAGE_PAYLOADS=s3: the payload store on SeaweedFS's S3 (the tests' server) instead of a directory;
// STORAGE_ENCRYPT=1 seals payloads with a fresh key. STORAGE_TIMING=1: after every turn, its wall time
// (message sent → turn completed, split at the answer's model call) and what it added to history and
// the payload store, then the first 10 model calls against the last 10. STORAGE_OUT=file keeps the rows as JSON.
const PAYLOADS: PayloadsMode = process.env.STORAGE_PAYLOADS === 's3' ? 's3' : 'dir';
const TIMING = !!process.env.STORAGE_TIMING;

/** One turn (two model calls: the read, then the answer), measured. */
interface TurnRow {
  turn: number;
  /** Message sent → the answer's model call starts (the read's model call, the tool, the next model call's input). */
  readLegMs: number;
  /** The answer's model call starts → the client has the completed turn. */
  answerLegMs: number;
  historyBytes: number;
  store: StoreCounts;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? NaN;

/** Least-squares slope of y over x. */
function slope(xs: number[], ys: number[]): number {
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  const num = xs.reduce((a, x, i) => a + (x - mx) * (ys[i]! - my), 0);
  const den = xs.reduce((a, x) => a + (x - mx) ** 2, 0);
  return den ? num / den : NaN;
}

/** Per model call: wall time and what was stored, the first five turns (10 calls) against the last five. */
function timingSummary(rows: TurnRow[], start: TurnRow): string[] {
  const wall = (r: TurnRow) => r.readLegMs + r.answerLegMs;
  const delta = (r: TurnRow, key: string): number => {
    const prev = rows[rows.indexOf(r) - 1] ?? start;
    if (key === 'history') return r.historyBytes - prev.historyBytes;
    if (key === 'stored') return delta(r, 'history') + delta(r, 'bytes');
    return (r.store[key] ?? 0) - (prev.store[key] ?? 0);
  };
  const groups = { 'first 10 calls': rows.slice(0, 5), 'last 10 calls': rows.slice(-5) };
  const keys = ['history', 'bytes', 'stored', 'objects', 'put', 'getOrHead'];
  const lines = [
    `calls | wall ms per call, p50 (read leg / answer leg) | per call: ${keys.join(' / ')} (B, B, B, objects, PUT, GET+HEAD)`,
  ];
  for (const [name, rs] of Object.entries(groups)) {
    const per = (key: string) => (rs.reduce((a, r) => a + delta(r, key), 0) / rs.length / 2).toFixed(1);
    const p50 = (f: (r: TurnRow) => number) => median(rs.map(f)).toFixed(0);
    lines.push(
      `${name} | ${(median(rs.map(wall)) / 2).toFixed(1)} (${p50((r) => r.readLegMs)} / ${p50((r) => r.answerLegMs)}) | ${keys.map(per).join(' / ')}`,
    );
  }
  // The first turn starts the session and warms the worker up: the trend is over the turns after it.
  const warm = rows.slice(1);
  const trend = slope(
    warm.map((r) => r.turn * 2),
    warm.map((r) => wall(r) / 2),
  );
  lines.push(
    `trend: ${trend.toFixed(3)} ms per call for each call more in the session (least squares, turns 2-${rows.length})`,
  );
  return lines;
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const dir = mkdtempSync(join(tmpdir(), 'bench-storage-'));
  const store = await startBenchPayloadStore(PAYLOADS, !!process.env.STORAGE_ENCRYPT, join(dir, 'payloads'));
  // The S3 client's credentials come from the process environment (the AWS SDK's chain).
  Object.assign(process.env, store.env);
  const settings = settingsFrom({ ...process.env, OPENWORKER_STATE_DIR: dir });
  const server = await startDevServer({ port: 0, headless: true, dbFile: join(dir, 'temporal.db'), settings });
  const turns = Math.max(...CHECKPOINTS) / 2;
  const steps = Array.from({ length: turns }, (_, i) => [
    { toolCalls: [{ id: `c${i}`, name: 'lookup', arguments: { customer: i } }] },
    { text: ANSWER(i) },
  ]).flat();
  const scripted = scriptedModel({ steps });
  const modelStarts: number[] = [];
  const model: typeof scripted = {
    ...scripted,
    generate: (...args) => (modelStarts.push(performance.now()), scripted.generate(...args)),
  };
  const taskQueue = `storage-${process.pid}`;
  const w = await createWorker({
    address: server.address,
    taskQueue,
    tools: [lookup],
    builtins: false,
    model,
    settings,
  });
  const running = w.worker.run();
  const c = await connectClient({ address: server.address, taskQueue, settings });
  const sessionId = `storage-${process.pid}`;
  const rows: TurnRow[] = [];
  // Before the first turn (the bucket's creation is among SeaweedFS's PUTs).
  const start: TurnRow = { turn: 0, readLegMs: 0, answerLegMs: 0, historyBytes: 0, store: await store.counts() };
  console.log(`bench:storage: ${store.describe}`);
  try {
    console.log('model calls | transcript KiB | history KiB | payload store KiB | stored ÷ transcript');
    for (let turn = 1; turn <= turns; turn++) {
      const sent = performance.now();
      const { messageId } = await sendMessage(c, { sessionId, text: `Look up customer ${turn - 1}.` });
      const done = await waitForTurn(c, { sessionId, messageId, timeoutMs: 60_000 });
      const ended = performance.now();
      if (done.state !== 'completed') throw new Error(`turn ${turn} ended ${done.state}`);
      const checkpoint = CHECKPOINTS.includes(turn * 2);
      if (!checkpoint && !TIMING) continue;
      // Measured first: a status query's answer over 16 KiB is itself stored.
      const history = await historyBytes(c, sessionId);
      const counts = await store.counts();
      if (TIMING) {
        const answerStart = modelStarts[turn * 2 - 1]!;
        rows.push({
          turn,
          readLegMs: answerStart - sent,
          answerLegMs: ended - answerStart,
          historyBytes: history,
          store: counts,
        });
        console.log(
          `  turn ${turn}: ${(ended - sent).toFixed(0)} ms, history ${kib(history)} KiB, store ${JSON.stringify(counts)}`,
        );
      }
      if (!checkpoint) continue;
      const transcript = utf8Bytes(JSON.stringify((await sessionStatus(c, sessionId)).transcript));
      const ratio = (history + counts.bytes!) / transcript;
      console.log(
        `${String(turn * 2).padStart(11)} | ${kib(transcript).padStart(14)} | ${kib(history).padStart(11)} | ${kib(counts.bytes!).padStart(17)} | ${ratio.toFixed(1)}×`,
      );
    }
    if (TIMING) for (const line of timingSummary(rows, start)) console.log(line);
    if (process.env.STORAGE_OUT)
      writeFileSync(process.env.STORAGE_OUT, JSON.stringify({ store: store.describe, start, rows }, null, 2));
  } finally {
    w.worker.shutdown();
    await running;
    await w.connection.close();
    await c.close();
    await server.stop();
    await store.stop();
    if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
    else console.log(dir);
  }
}

main().catch((err) => {
  console.error(`bench:storage failed: ${(err as Error).message}`);
  process.exit(1);
});
