import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { OpenWorkerClient } from '../client/connection';
import { connectClient } from '../client/connection';
import { sendMessage } from '../client/session';
import { streamTurn } from '../client/stream';
import { startDevServer } from '../dev/server';
import { turnWorkflowId } from '../workflows/ids';
import { createWorker } from '../worker/worker';
import type { ModelProvider } from '../activities/model';
import { loadModel } from '../activities/models/index';
import type { FakeModelServer } from '../test/support/fakeModelServer';
import { startFakeModelServer } from '../test/support/fakeModelServer';
import { percentile } from './report';

// npm run bench:stream — how long a model's text takes to reach a reader: from the moment the (fake,
// OpenAI-protocol) provider writes a word to the moment streamTurn yields it, through the worker's
// heartbeat (throttled to 250 ms), the dev server and a describe poll. Each reply streams 20 words
// 50 ms apart (1 s). Then the same turns with nobody reading, and without streaming (the whole answer
// after 1 s), for the server's CPU each way.
// BENCH_STREAM_RUNS (default 30) turns one at a time; BENCH_STREAM_POLL_MS the reader's poll (100).

const RUNS = Number(process.env.BENCH_STREAM_RUNS ?? 30);
const POLL_MS = Number(process.env.BENCH_STREAM_POLL_MS ?? 100);
const WORDS = Array.from({ length: 20 }, (_, i) => `word${i}`);
const TEXT = WORDS.join(' ');

/** The dev server's CPU time so far (ms), from /proc. */
const cpuMs = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
};

interface Measured {
  first: number[];
  lag: number[];
  events: number[];
}

async function streamed(c: OpenWorkerClient, fake: FakeModelServer, i: number, m: Measured): Promise<void> {
  fake.enqueue({ text: TEXT, chunkDelayMs: 50 });
  const asked = fake.requests.length;
  const sent = await sendMessage(c, { sessionId: `bench-stream-${i}`, text: 'go' });
  let first: number | undefined;
  const seen: { at: number; words: number }[] = [];
  for await (const e of streamTurn(c, { sessionId: sent.sessionId, messageId: sent.messageId, pollMs: POLL_MS })) {
    first ??= Date.now();
    seen.push({ at: Date.now(), words: e.text.trim().split(' ').length });
  }
  const r = fake.requests[asked];
  if (!first || !r?.firstTextAt || !r.textAt) throw new Error(`run ${i}: no streamed text`);
  m.first.push(first - r.firstTextAt);
  // Each event's newest word: how long after the provider sent it the reader had it.
  for (const s of seen) m.lag.push(s.at - r.textAt[s.words - 1]!);
  m.events.push(seen.length);
}

async function unread(c: OpenWorkerClient, fake: FakeModelServer, i: number, stream = true): Promise<void> {
  // Without streaming, the answer comes whole after the same second.
  fake.enqueue(
    stream ? { text: TEXT, chunkDelayMs: 50 } : { text: TEXT, hold: new Promise((r) => setTimeout(r, 1000)) },
  );
  const sent = await sendMessage(c, { sessionId: `bench-${stream ? 'quiet' : 'whole'}-${i}`, text: 'go' });
  const handle = c.client.workflow.getHandle(turnWorkflowId(sent.sessionId, 1));
  for (;;) {
    try {
      return void (await handle.result());
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const dir = mkdtempSync(join(tmpdir(), 'openworker-bench-stream-'));
  const dev = await startDevServer({ port: 0, headless: true, dbFile: join(dir, 'temporal.db') });
  const fake = await startFakeModelServer();
  const taskQueue = 'bench-stream';
  const model = `openai-compatible:fake-model@${fake.url}`;
  const { worker, connection } = await createWorker({ address: dev.address, taskQueue, model, log: () => undefined });
  const c = await connectClient({ address: dev.address, taskQueue });
  try {
    const out = await worker.runUntil(async () => {
      const m: Measured = { first: [], lag: [], events: [] };
      for (let i = 0; i < 2; i++) await streamed(c, fake, -1 - i, { first: [], lag: [], events: [] }); // warm-up
      let cpu = cpuMs(dev.pid);
      for (let i = 0; i < RUNS; i++) await streamed(c, fake, i, m);
      const readCpu = (cpuMs(dev.pid) - cpu) / RUNS;
      cpu = cpuMs(dev.pid);
      for (let i = 0; i < RUNS; i++) await unread(c, fake, i);
      return { m, readCpu, quietCpu: (cpuMs(dev.pid) - cpu) / RUNS };
    });
    // The same model without streaming (no onText: generateText, one answer): the heartbeat every 2 s only.
    const provider = loadModel(model, process.env);
    const whole: ModelProvider = { ...provider, generate: (r, o) => provider.generate(r, { signal: o.signal }) };
    const plain = await createWorker({
      address: dev.address,
      taskQueue: `${taskQueue}-whole`,
      model: whole,
      log: () => undefined,
    });
    const c2 = await connectClient({ address: dev.address, taskQueue: `${taskQueue}-whole` });
    const wholeCpu = await plain.worker.runUntil(async () => {
      await unread(c2, fake, -1, false);
      const cpu = cpuMs(dev.pid);
      for (let i = 0; i < RUNS; i++) await unread(c2, fake, i, false);
      return (cpuMs(dev.pid) - cpu) / RUNS;
    });
    await c2.close();
    await plain.connection.close();
    const p = (xs: number[], q: number) => Math.round(percentile(xs, q));
    console.log(
      JSON.stringify({
        runs: RUNS,
        pollMs: POLL_MS,
        firstTokenToReaderMs: { p50: p(out.m.first, 50), p95: p(out.m.first, 95), max: Math.max(...out.m.first) },
        wordToReaderMs: { p50: p(out.m.lag, 50), p95: p(out.m.lag, 95) },
        eventsPerCall: p(out.m.events, 50),
        serverCpuMsPerTurn: {
          streamedAndRead: Math.round(out.readCpu),
          streamedUnread: Math.round(out.quietCpu),
          notStreamed: Math.round(wholeCpu),
        },
      }),
    );
  } finally {
    await c.close();
    await connection.close();
    await fake.close();
    await dev.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
