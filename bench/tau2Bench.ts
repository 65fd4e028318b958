import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { DevServer } from '../dev/server';
import { startDevServer } from '../dev/server';
import { FAULT_KINDS, schedule } from './tau2/cases';
import { airlineTools, writeTasks } from './tau2/env';
import type { CaseEnv, CaseResult } from './tau2/runner';
import { SYSTEMS, runCase } from './tau2/runner';
import { summarize, tableOf } from './tau2/report';

// npm run bench:tau2 [-- --tasks 2,7 | --tasks 5] [--seed 1] [--kinds worker@after_execute,mcp@after_apply]
//                      [--systems openworker,naive]
// tau2-bench's airline tasks with writes, replayed through a worker with a seeded crash on one write
// per task and fault kind; see docs/guarantees.md. Its own file-backed Temporal dev server, restarted
// by the temporal@ faults. Prints a line per case, then the table; JSON in bench-results/.

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        tasks: { type: 'string' },
        seed: { type: 'string', default: '1' },
        kinds: { type: 'string', default: FAULT_KINDS.join(',') },
        systems: { type: 'string', default: 'openworker,naive' },
      },
    });
  } catch (err) {
    throw new Error(`${(err as Error).message}; the options are --tasks, --seed, --kinds, --systems`);
  }
  const { values } = parsed;
  if (!/^\d+$/.test(values.seed!)) throw new Error(`--seed: ${values.seed}? a whole number, e.g. --seed 1`);
  const seed = Number(values.seed);
  const kinds = oneOf('--kinds', values.kinds!, FAULT_KINDS);
  const systems = oneOf('--systems', values.systems!, SYSTEMS);
  let tasks = writeTasks();
  if (values.tasks) {
    const all = tasks;
    const ids = values.tasks.split(',');
    tasks =
      /^\d+$/.test(values.tasks) && !all.some((t) => t.id === values.tasks)
        ? all.slice(0, Number(values.tasks))
        : all.filter((t) => ids.includes(t.id));
    const unknown = ids.filter((id) => !/^\d+$/.test(values.tasks!) && !all.some((t) => t.id === id));
    if (!tasks.length || unknown.length)
      throw new Error(
        `--tasks: ${unknown.join(',') || values.tasks}? airline task IDs with writes (${all.map((t) => t.id).join(',')}), or a count`,
      );
  }
  const cases = schedule(tasks, kinds, seed);

  const dir = mkdtempSync(join(tmpdir(), 'openworker-tau2-'));
  const dbFile = join(dir, 'temporal.db');
  let server: DevServer = await startDevServer({ port: 0, headless: true, dbFile });
  const env: CaseEnv = {
    address: server.address,
    dir,
    tools: airlineTools(),
    async restartTemporal() {
      const port = server.port;
      server.kill('SIGKILL');
      await server.exited;
      server = await startDevServer({ port, headless: true, dbFile });
    },
  };
  const started = Date.now();
  const load0 = loadavg()[0]!;
  const results: CaseResult[] = [];
  console.log(
    `tau2 airline: ${tasks.length} tasks with writes, ${cases.length} cases × ${systems.join(' + ')}, seed ${seed}`,
  );
  try {
    for (const [i, c] of cases.entries()) {
      for (const system of systems) {
        const r = await runCase(c, system, env);
        results.push(r);
        console.log(
          `[${i + 1}/${cases.length}] task ${r.task} ${r.kind} ${system} (write #${c.nthWrite}, ${c.task.actions[c.action]!.name}): ` +
            `db ${r.dbMatch ? 'match' : 'DIFFERS'}, ${r.writes}/${r.approved} writes, ${r.duplicates} duplicate(s), ` +
            `turn ${r.turnCompleted ? 'completed' : 'NOT completed'}, recoveries [${r.recoveries.join(' ')}], ${r.ms} ms` +
            (r.error ? `, ERROR ${r.error}` : ''),
        );
      }
    }
  } finally {
    await server.stop();
    if (results.some((r) => r.error || !r.dbMatch || r.duplicates)) console.log(`case files kept in ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
  const load = `load average ${load0.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end (${(
    (Date.now() - started) /
    1000
  ).toFixed(0)} s)`;
  console.log(`\n${tableOf(summarize(results))}\n\n${load}`);
  mkdirSync('bench-results', { recursive: true });
  const out = join('bench-results', `tau2-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(out, JSON.stringify({ seed, kinds, systems, load, results }, null, 2));
  console.log(`results: ${out}`);
}

/** A comma-separated list whose every item is one of `allowed`. */
function oneOf<T extends string>(flag: string, list: string, allowed: readonly T[]): T[] {
  const items = list.split(',');
  const bad = items.find((x) => !(allowed as readonly string[]).includes(x));
  if (bad !== undefined) throw new Error(`${flag}: ${bad}? one of ${allowed.join(', ')}`);
  return items as T[];
}

main().catch((err) => {
  console.error(`bench:tau2: ${(err as Error).message}`);
  process.exit(1);
});
