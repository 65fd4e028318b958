import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
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

function dirBytes(dir: string): number {
  if (!existsSync(dir)) return 0; // nothing has reached 16 KiB yet
  let total = 0;
  for (const name of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, name.name);
    total += name.isDirectory() ? dirBytes(path) : statSync(path).size;
  }
  return total;
}

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

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const dir = mkdtempSync(join(tmpdir(), 'bench-storage-'));
  const payloads = join(dir, 'payloads');
  const settings = settingsFrom({ ...process.env, OPENWORKER_STATE_DIR: dir, OPENWORKER_PAYLOAD_STORE: payloads });
  const server = await startDevServer({ port: 0, headless: true, dbFile: join(dir, 'temporal.db'), settings });
  const turns = Math.max(...CHECKPOINTS) / 2;
  const steps = Array.from({ length: turns }, (_, i) => [
    { toolCalls: [{ id: `c${i}`, name: 'lookup', arguments: { customer: i } }] },
    { text: ANSWER(i) },
  ]).flat();
  const taskQueue = `storage-${process.pid}`;
  const w = await createWorker({
    address: server.address,
    taskQueue,
    tools: [lookup],
    builtins: false,
    model: scriptedModel({ steps }),
    settings,
  });
  const running = w.worker.run();
  const c = await connectClient({ address: server.address, taskQueue, settings });
  const sessionId = `storage-${process.pid}`;
  try {
    console.log('model calls | transcript KiB | history KiB | payload store KiB | stored ÷ transcript');
    for (let turn = 1; turn <= turns; turn++) {
      const { messageId } = await sendMessage(c, { sessionId, text: `Look up customer ${turn - 1}.` });
      const done = await waitForTurn(c, { sessionId, messageId, timeoutMs: 60_000 });
      if (done.state !== 'completed') throw new Error(`turn ${turn} ended ${done.state}`);
      if (!CHECKPOINTS.includes(turn * 2)) continue;
      // Measured first: a status query's answer over 16 KiB is itself stored.
      const history = await historyBytes(c, sessionId);
      const store = dirBytes(payloads);
      const transcript = utf8Bytes(JSON.stringify((await sessionStatus(c, sessionId)).transcript));
      const ratio = (history + store) / transcript;
      console.log(
        `${String(turn * 2).padStart(11)} | ${kib(transcript).padStart(14)} | ${kib(history).padStart(11)} | ${kib(store).padStart(17)} | ${ratio.toFixed(1)}×`,
      );
    }
  } finally {
    w.worker.shutdown();
    await running;
    await w.connection.close();
    await c.close();
    await server.stop();
    if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true });
    else console.log(dir);
  }
}

main().catch((err) => {
  console.error(`bench:storage failed: ${(err as Error).message}`);
  process.exit(1);
});
