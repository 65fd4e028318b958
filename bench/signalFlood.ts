import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { connectClient } from '../client/connection';
import type { OpenWorkerClient } from '../client/connection';
import { startDevServer } from '../dev/server';
import { approveSignal, messageSignal, sessionWorkflowId, turnStatusQuery } from '../workflows/definitions';
import { CALL, sleep, startTurn, within } from './durability';
import { killHard, startBenchWorker } from './procs';

// What a flood of signals costs a parked turn and a session: history events and bytes per signal,
// and whether the workflow still answers a query and takes the decision that matters afterwards.
// Temporal warns at 10,240 events / 10 MiB of history and terminates a run at 51,200 / 50 MiB.
// Run: npm run bench:flood [-- --signals N] [--turn-only] [--message-bytes N]

const argv = process.argv;
const N = Number(argv.includes('--signals') ? argv[argv.indexOf('--signals') + 1] : 2000);
const BATCH = 50;
/** `--message-bytes N`: pad each flooding message to N bytes (under 16 KiB a message stays inline in history). */
const PAD = Number(argv.includes('--message-bytes') ? argv[argv.indexOf('--message-bytes') + 1] : 0);

interface Row {
  target: string;
  signals: number;
  refused: number;
  events: number;
  bytes: number;
  eventsPerSignal: number;
  bytesPerSignal: number;
  queryMs: number;
}

/** Sends N signals, BATCH at a time; returns how many the server refused and its first reason. */
async function flood(
  h: WorkflowHandle,
  send: (i: number) => Promise<void>,
): Promise<{ refused: number; why?: string }> {
  let refused = 0;
  let why: string | undefined;
  const one = (i: number) =>
    send(i).catch((err: Error) => {
      refused++;
      why ??= err.message.split('\n')[0];
    });
  for (let i = 0; i < N; i += BATCH)
    await Promise.all(Array.from({ length: Math.min(BATCH, N - i) }, (_, k) => one(i + k)));
  // Let the worker take every signal before the history is measured.
  await sleep(3000);
  if (refused) console.log(`flood: ${h.workflowId}: the server refused ${refused} of ${N} signals: ${why}`);
  return { refused, ...(why ? { why } : {}) };
}

async function measure(
  target: string,
  h: WorkflowHandle,
  before: { events: number; bytes: number },
  refused: number,
): Promise<Row> {
  const d = await h.describe();
  const events = Number(d.raw.workflowExecutionInfo?.historyLength ?? 0);
  const bytes = Number(d.raw.workflowExecutionInfo?.historySizeBytes ?? 0);
  const t0 = Date.now();
  await within(
    h.query(turnStatusQuery).catch(() => h.query('__stack_trace')),
    60_000,
    `query ${target}`,
  );
  return {
    target,
    signals: N,
    refused,
    events,
    bytes,
    eventsPerSignal: (events - before.events) / (N - refused),
    bytesPerSignal: Math.round((bytes - before.bytes) / (N - refused)),
    queryMs: Date.now() - t0,
  };
}

async function size(h: WorkflowHandle): Promise<{ events: number; bytes: number }> {
  const d = await h.describe();
  return {
    events: Number(d.raw.workflowExecutionInfo?.historyLength ?? 0),
    bytes: Number(d.raw.workflowExecutionInfo?.historySizeBytes ?? 0),
  };
}

/** A session flooded with messages while its turns run (each one queues a turn). */
async function floodSession(c: OpenWorkerClient, taskQueue: string): Promise<Row> {
  const session = c.client.workflow.getHandle(sessionWorkflowId('flood-session'));
  await c.client.workflow.signalWithStart('session', {
    workflowId: sessionWorkflowId('flood-session'),
    taskQueue,
    args: [{ sessionId: 'flood-session' }],
    signal: messageSignal,
    signalArgs: [{ text: 'hello', messageId: 'm-0' }],
  });
  await sleep(2000);
  const sessionBefore = await size(session);
  const onSession = await flood(session, (i) =>
    session.signal(messageSignal, { text: `message ${i} `.padEnd(PAD, 'x'), messageId: `m-${i + 1}` }),
  );
  const d = await session.describe();
  const events = Number(d.raw.workflowExecutionInfo?.historyLength ?? 0);
  const bytes = Number(d.raw.workflowExecutionInfo?.historySizeBytes ?? 0);
  return {
    target: 'session: messages while turns run',
    signals: N,
    refused: onSession.refused,
    events,
    bytes,
    eventsPerSignal: (events - sessionBefore.events) / (N - onSession.refused),
    bytesPerSignal: Math.round((bytes - sessionBefore.bytes) / (N - onSession.refused)),
    queryMs: NaN,
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'openworker-flood-'));
  const server = await startDevServer({ port: 0, headless: true, dbFile: join(dir, 'temporal.db') });
  process.env.TEMPORAL_ADDRESS = server.address;
  process.env.OPENWORKER_PAYLOAD_STORE = join(dir, 'payloads');
  const taskQueue = 'bench-flood';
  const worker = await startBenchWorker({ system: 'b3', taskQueue });
  const c = await connectClient({ address: server.address, taskQueue });
  const rows: Row[] = [];
  try {
    // A parked turn flooded with decisions for a call it does not have (each is refused and audited).
    const turn = await startTurn(c, taskQueue, 'flood', 'effect', false);
    await within(
      (async () => {
        while ((await turn.query(turnStatusQuery)).state !== 'awaiting_approval') await sleep(100);
      })(),
      60_000,
      'the turn to park',
    );
    const turnBefore = await size(turn);
    const onTurn = await flood(turn, (i) =>
      turn.signal(approveSignal, { toolCallId: `no-such-call-${i}`, by: 'flood' }),
    );
    rows.push(await measure('parked turn: approvals for an unknown call', turn, turnBefore, onTurn.refused));
    const t0 = Date.now();
    // Past the server's signal limit per execution the real approval is refused too.
    const refusedApproval = await turn.signal(approveSignal, { toolCallId: CALL, by: 'bench' }).then(
      () => undefined,
      (err: Error) => String((err.cause as Error | undefined)?.message ?? err.message),
    );
    if (refusedApproval) console.log(`flood: the server refused the real approval: ${refusedApproval}`);
    else {
      await within(turn.result(), 120_000, 'the flooded turn to finish after its approval');
      console.log(`flood: the flooded turn finished ${Date.now() - t0} ms after its real approval`);
    }

    if (!argv.includes('--turn-only')) rows.push(await floodSession(c, taskQueue));
  } finally {
    await killHard(worker);
    await c.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.table(rows);
  for (const r of rows) {
    const toWarn = Math.floor(Math.min(10_240 / r.eventsPerSignal, (10 * 2 ** 20) / Math.max(r.bytesPerSignal, 1)));
    console.log(
      `flood: ${r.target}: ~${toWarn} such signals reach Temporal's history warning (10,240 events / 10 MiB)`,
    );
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
