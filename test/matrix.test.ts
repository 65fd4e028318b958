import { strict as assert } from 'node:assert';
import { readdirSync, rmSync } from 'node:fs';
import type { Cell } from './matrix/cells';
import { HUMAN_ROWS, PARTITION_ROWS, RERUN_ROWS, ROWS, SERVER_RESTART_ROWS, cellsOf } from './matrix/cells';
import type { CellEnv, CellReport } from './matrix/runner';
import { runCell } from './matrix/runner';
import { httpPeer, smtpPeer } from './matrix/peers';
import { newHistoryDir } from './matrix/histories';
import { porcupineChecker, runPorcupine } from './support/porcupine';
import type { MailSinkProcess } from './support/mailSinkProcess';
import { startMailSinkProcess } from './support/mailSinkProcess';
import type { PaymentsProcess } from './support/paymentsProcess';
import { startPaymentsProcess } from './support/paymentsProcess';

// The fault matrix (docs/guarantees.md): every row × recovery policy × external system, with real
// worker processes SIGKILLed at barriers they or the external system report, a real SMTP sink and
// payments API in their own processes, and a checker over three oracles after every cell.
// Cells run a few at a time (they mostly wait on timeouts); each `it` reports one cell.
// MATRIX_ONLY=<regex> runs a subset; MATRIX_CONCURRENCY sets how many run at once (default 4).

const only = process.env.MATRIX_ONLY ? new RegExp(process.env.MATRIX_ONLY) : undefined;
const CELLS: Cell[] = [
  ...cellsOf(ROWS),
  ...cellsOf(SERVER_RESTART_ROWS),
  ...cellsOf(RERUN_ROWS),
  ...cellsOf(PARTITION_ROWS),
  ...cellsOf(HUMAN_ROWS),
].filter((c) => !only || only.test(c.id));
const CONCURRENCY = Math.max(1, Number(process.env.MATRIX_CONCURRENCY ?? 4));

type Settled = { ok: true; report: CellReport } | { ok: false; error: unknown };

/** At most `n` at a time, in order; of those at most `heavyMax` `heavy` ones (each with a Temporal server of its own). */
function pool(n: number, heavyMax: number) {
  let running = 0;
  let heavyRunning = 0;
  const queue: { heavy: boolean; go: () => void }[] = [];
  const next = () => {
    for (let i = 0; i < queue.length && running < n; i++) {
      const q = queue[i]!;
      if (q.heavy && heavyRunning >= heavyMax) continue;
      queue.splice(i--, 1);
      running++;
      if (q.heavy) heavyRunning++;
      q.go();
    }
  };
  return <T>(heavy: boolean, fn: () => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      queue.push({
        heavy,
        go: () =>
          void fn()
            .then(resolve, reject)
            .finally(() => {
              running--;
              if (heavy) heavyRunning--;
              next();
            }),
      });
      next();
    });
}

describe('fault matrix: F1–F14 × manual / idempotent / reconcile × HTTP / SMTP, and the human side', function () {
  const runs = new Map<string, Promise<Settled>>();
  const privateApis: PaymentsProcess[] = [];
  let api: PaymentsProcess;
  let sink: MailSinkProcess;
  const started = Date.now();
  // This run's own: files of other runs (or of mocha's other process) are never judged with it.
  const historyDir = newHistoryDir();

  before(async function () {
    this.timeout(60_000);
    [api, sink] = await Promise.all([startPaymentsProcess(), startMailSinkProcess()]);
    // Built while the cells wait on their timeouts (a first build compiles Go's standard library); the last test awaits it.
    porcupineChecker().catch(() => undefined);
    const run = pool(CONCURRENCY, 2);
    for (const cell of CELLS) {
      const settled = run(!!cell.row.plan.restartServer, async () => {
        let env: CellEnv;
        if (cell.peer === 'smtp') env = { peer: smtpPeer(sink), historyDir };
        else {
          // F9 moves the API's clock: a private API, so no other cell's keys expire with it.
          const own = cell.row.plan.forgetKeys ? await startPaymentsProcess() : api;
          if (own !== api) privateApis.push(own);
          env = {
            peer: httpPeer(own),
            historyDir,
            forgetKeys: () => own.advanceClock(25 * 60 * 60 * 1000),
            foreignUse: async (key, args) => {
              const res = await fetch(`${own.url}/payments`, {
                method: 'POST',
                headers: { 'content-type': 'application/json', 'idempotency-key': key },
                body: JSON.stringify({ ...args, amount: 99 }),
              });
              if (res.status !== 201) throw new Error(`seeding the key answered ${res.status}`);
              return 1;
            },
          };
        }
        return runCell(cell, env);
      }).then(
        (report): Settled => ({ ok: true, report }),
        (error: unknown): Settled => ({ ok: false, error }),
      );
      runs.set(cell.id, settled);
    }
  });

  after(async function () {
    this.timeout(300_000);
    const all = await Promise.all(runs.values());
    await Promise.all([api?.stop(), sink?.stop(), ...privateApis.map((p) => p.stop())]);
    const ok = all.filter((s): s is { ok: true; report: CellReport } => s.ok);
    const kills = ok.reduce((n, s) => n + s.report.workersKilled, 0);
    const restarts = ok.reduce((n, s) => n + s.report.serverRestarts, 0);
    const checks = ok.reduce((n, s) => n + s.report.checks.length, 0);
    const exportMs = ok.reduce((n, s) => n + (s.report.exportMs ?? 0), 0);
    console.log(
      `      matrix: ${ok.length}/${all.length} cells passed, ${checks} invariant checks, ${kills} worker SIGKILLs, ${restarts} server restarts, ${Math.round((Date.now() - started) / 1000)} s (history export ${exportMs} ms in all)`,
    );
  });

  for (const cell of CELLS) {
    const e = cell.expect;
    const answered = e.human?.length ? `${e.human.join(', ')} → ` : 'left parked: ';
    const outcome = `${e.parks?.length ? `parks ×${e.parks.length} → ${answered}` : ''}${e.state}, ${e.effects} effect${e.effects === 1 ? '' : 's'}, ${e.runs} run${e.runs === 1 ? '' : 's'}`;
    it(`${cell.id}: ${outcome}`, async function () {
      this.timeout(30 * 60_000); // each cell bounds itself (runner.ts); this covers its wait in the queue
      const r = await runs.get(cell.id)!;
      if (!r.ok) throw r.error;
    });
  }

  // The independent check: every finished cell's history (test/matrix/histories.ts) through
  // Porcupine against the model in checker/porcupine (docs/guarantees.md#the-independent-check).
  it('every history has a legal order under the model (Porcupine, checker/porcupine)', async function () {
    this.timeout(30 * 60_000);
    const all = await Promise.all(runs.values());
    const dir = historyDir;
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    const finished = all.filter((s) => s.ok).length;
    assert.ok(files.length >= finished, `${files.length} histories for ${finished} finished cells in ${dir}`);
    if (!files.length) {
      rmSync(dir, { recursive: true, force: true });
      return this.skip(); // no cell finished: their own failures say why
    }
    const r = await runPorcupine([dir]);
    console.log(`      ${r.stdout.trim().split('\n').at(-1)} [${dir}]`);
    assert.equal(r.code, 0, `${r.stdout}${r.stderr}histories: ${dir}`);
    if (!process.env.OPENWORKER_HISTORY_DIR) rmSync(dir, { recursive: true, force: true });
  });
});
