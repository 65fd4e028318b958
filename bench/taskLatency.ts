import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { DYNAMIC_CONFIG, startDevServer } from '../dev/server';
import type { DevServerOptions } from '../dev/server';
import { percentile } from './report';

// Where a workflow task's time goes on the dev server: the smallest workflows (no activity, one, two)
// run one at a time against a fresh server per variant, with Temporal's queue poll rate and SQLite's
// defaults, with each change alone, and with what `server`/`dev` use. Run: npm run bench:tasks.

type Event = temporal.api.history.v1.IHistoryEvent;
const WORKFLOWS = ['noActivity', 'oneActivity', 'twoActivities'] as const;
const POLL_KEYS = Object.keys(DYNAMIC_CONFIG).filter((k) => k.endsWith('MaxPollRPS'));
const TEMPORAL_POLL_DEFAULTS = Object.fromEntries(POLL_KEYS.map((k) => [k, 20]));

const VARIANTS: { name: string; server: DevServerOptions }[] = [
  { name: 'Temporal defaults', server: { dynamicConfig: TEMPORAL_POLL_DEFAULTS, sqliteSync: 'sqlite-defaults' } },
  { name: 'queue poll rate 1000/s', server: { sqliteSync: 'sqlite-defaults' } },
  { name: 'SQLite WAL, synchronous=normal', server: { dynamicConfig: TEMPORAL_POLL_DEFAULTS, sqliteSync: 'normal' } },
  { name: 'both (server, dev)', server: { sqliteSync: 'normal' } },
];

// Not events.ts's eventMs, which floors to whole ms: the waits measured here are a few ms.
const ms = (e: Event): number => Number(e.eventTime!.seconds) * 1000 + e.eventTime!.nanos! / 1e6;
const p50 = (xs: number[]): number => percentile(xs, 50);

/** Scheduled → started of each workflow task in a history. */
function taskWaits(events: Event[]): number[] {
  let scheduled = 0;
  const out: number[] = [];
  for (const e of events) {
    if (e.workflowTaskScheduledEventAttributes) scheduled = ms(e);
    if (e.workflowTaskStartedEventAttributes) out.push(ms(e) - scheduled);
  }
  return out;
}

async function measure(server: DevServerOptions, runs: number): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'openworker-tasks-'));
  const dev = await startDevServer({ ...server, port: 0, headless: true, dbFile: join(dir, 'temporal.db') });
  const native = await NativeConnection.connect({ address: dev.address });
  const connection = await Connection.connect({ address: dev.address });
  try {
    const client = new Client({ connection });
    const worker = await Worker.create({
      connection: native,
      taskQueue: 'tasks',
      workflowsPath: require.resolve('./taskLatencyWorkflow'),
      activities: { noop: async () => 0 },
    });
    return await worker.runUntil(async () => {
      const cells: string[] = [];
      for (const type of WORKFLOWS) {
        const walls: number[] = [];
        const waits: number[] = [];
        for (let i = 0; i < runs + 3; i++) {
          const t0 = performance.now();
          const h = await client.workflow.start(type, { taskQueue: 'tasks', workflowId: `${type}-${i}` });
          await h.result();
          if (i < 3) continue; // warm-up
          walls.push(performance.now() - t0);
          waits.push(...taskWaits((await h.fetchHistory()).events ?? []));
        }
        cells.push(`${p50(walls).toFixed(0)} (${p50(waits).toFixed(1)})`);
      }
      return cells;
    });
  } finally {
    await native.close();
    await connection.close();
    await dev.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const runs = Number(process.argv[2] ?? 40);
  console.log(
    `p50 ms from start to result, one workflow at a time (p50 workflow task scheduled → started), ${runs} runs each\n`,
  );
  console.log('| server | no activity | one activity | two activities |\n|---|---|---|---|');
  for (const v of VARIANTS) console.log(`| ${v.name} | ${(await measure(v.server, runs)).join(' | ')} |`);
}

main().catch((err) => {
  console.error(`bench:tasks: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
