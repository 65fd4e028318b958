import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OpenWorkerClient } from '../../client/connection';
import { connectClient } from '../../client/connection';
import { approve, recover } from '../../client/decisions';
import { turnStatus } from '../../client/session';
import type { DevServer } from '../../dev/server';
import { startDevServer } from '../../dev/server';
import type { LedgerEntry } from '../../workflows/types';
import type { CliResult, WorkerProcess } from '../support/processes';
import { runCli, spawnWorker } from '../support/processes';
import { recordHistory } from '../support/histories';
import { TOOLS, eventually, scripted, startTurn, uniq } from '../support/scenario';
import { checkBarrier } from './barriers';
import type { Cell, Expect } from './cells';
import { RECORDED, fixtureName, pointFor } from './cells';
import type { CheckInput } from './checker';
import { check } from './checker';
import type { CellCall } from './histories';
import { exportCell } from './histories';
import type { Peer } from './peers';
import { SCENARIOS } from './scenarios';

/**
 * Runs one matrix cell against real processes: a worker (killed with SIGKILL at the barrier the
 * cell names, then replaced), the external system, and, for F11, a Temporal server of its own that
 * is restarted on its file. Everything it starts is stopped before it returns.
 */

export interface CellEnv {
  peer: Peer;
  /** Another caller's request with the call's key (F10); returns how many effects it made. */
  foreignUse?(key: string, args: Record<string, unknown>): Promise<number>;
  /** Moves the external system's clock past its key retention (F9). */
  forgetKeys?(): Promise<void>;
  /** Where the cell's history goes for the independent checker; none (the randomized tier): not exported. */
  historyDir?: string;
}

export interface CellReport {
  cell: string;
  executionId: string;
  ms: number;
  workersKilled: number;
  serverRestarts: number;
  checks: string[];
  /** Time spent writing the cell's history for checker/porcupine. */
  exportMs?: number;
}

const TIMEOUT_MS = 150_000;
const FINAL: readonly string[] = ['succeeded', 'failed', 'rejected'];

/** What a cell works with; scenarios.ts builds the unusual rows (F12, F13) from the same parts. */
export interface CellContext {
  cell: Cell;
  env: CellEnv;
  peer: Peer;
  args: Record<string, unknown>;
  taskQueue: string;
  /** The current client (a server restart replaces it). */
  c(): OpenWorkerClient;
  /** A worker process of this cell; `model` defaults to one call with `args`, then "done". */
  worker(opts?: {
    faults?: string;
    model?: string;
    extraEnv?: Record<string, string>;
    /** The worker's wall clock this many seconds off true time (test/support/clockSkew.ts). */
    clockSkewSeconds?: number;
  }): Promise<WorkerProcess>;
  kill(w: WorkerProcess): Promise<void>;
  /** The CLI as a user runs it, against this cell's server. */
  cli(args: string[]): Promise<CliResult>;
  /** `recover <session> c1 --decision retry --by <by>` through the CLI, on this cell's task queue. */
  cliRetry(sessionId: string, by: string): Promise<CliResult>;
  restartServer(): Promise<void>;
  /** Starts a turn and returns it parked at the approval of its one call. */
  startParked(sessionId?: string): Promise<{ sessionId: string; turn: number; workflowId: string; entry: LedgerEntry }>;
  approve(target: {
    sessionId: string;
    toolCallId: string;
    turn?: number;
    argsDigest: string;
    workerUp: boolean;
  }): Promise<void>;
  /** Waits for each park of the call and answers it as `expect` says, until the call settles. */
  settle(
    t: { sessionId: string; workflowId: string; toolCallId: string; turn?: number },
    expect: Expect,
    onPark?: () => Promise<void>,
  ): Promise<string[]>;
  /** Reads the three oracles and checks them; `expect: null` checks the invariants only. */
  finish(t: {
    workflowId: string;
    executionId: string;
    toolCallId?: string;
    args?: Record<string, unknown>;
    foreign?: number;
    extraChecks?: string[];
    expect?: Expect | null;
  }): Promise<CellReport>;
}

/** A cell's own processes: never the shared afterEach cleanup, always its own `finally`. */
class Scope {
  readonly procs = new Set<ChildProcess>();
  kills = 0;
  restarts = 0;
  async stop(): Promise<void> {
    await Promise.all(
      [...this.procs].map(
        (p) =>
          new Promise<void>((resolve) => {
            if (p.exitCode !== null || p.signalCode !== null) return resolve();
            p.once('exit', () => resolve());
            p.kill('SIGKILL');
          }),
      ),
    );
  }
}

export async function runCell(cell: Cell, env: CellEnv): Promise<CellReport> {
  return runWith(cell, env, cell.row.plan.scenario ? SCENARIOS[cell.row.plan.scenario] : standard);
}

/** Runs `scenario` with a context for `cell`, bounded in time; stops everything it started. */
export async function runWith(
  cell: Cell,
  env: CellEnv,
  scenario: (ctx: CellContext) => Promise<CellReport>,
): Promise<CellReport> {
  const started = Date.now();
  const scope = new Scope();
  let server: DevServer | undefined;
  let dir: string | undefined;
  let client: OpenWorkerClient | undefined;
  const retired: OpenWorkerClient[] = [];
  let deadline: NodeJS.Timeout | undefined;
  /** The cell's first call, until finish() exports it; a cell that fails first exports it on the way out. */
  let current: CellCall | undefined;
  try {
    const { plan } = cell.row;
    if (plan.restartServer) {
      dir = mkdtempSync(join(tmpdir(), 'openworker-f11-'));
      server = await startDevServer({ port: 0, headless: true, dbFile: join(dir, 'temporal.db') });
    }
    const taskQueue = uniq('mx');
    client = await connectClient({ taskQueue, ...(server ? { address: server.address } : {}) });
    const { peer } = env;
    const args = peer.args(uniq(`${cell.row.row}-${cell.policy}`));
    const defaultModel = scripted([{ toolCalls: [{ id: 'c1', name: peer.tool, arguments: args }] }, { text: 'done' }]);
    const c = () => client!;
    const ctx: CellContext = {
      cell,
      env,
      peer,
      args,
      taskQueue,
      c,
      worker: (opts = {}) =>
        spawnWorker({
          taskQueue,
          model: opts.model ?? defaultModel,
          tools: [TOOLS],
          env: {
            ...peer.env(cell.policy, {
              ...(plan.timeout ? { timeout: plan.timeout } : {}),
              ...(plan.keyRetention ? { keyRetention: plan.keyRetention } : {}),
            }),
            ...(server ? { TEMPORAL_ADDRESS: server.address } : {}),
            ...opts.extraEnv,
          },
          scope: scope.procs,
          ...(opts.faults ? { faults: opts.faults } : {}),
          ...(opts.clockSkewSeconds !== undefined ? { clockSkewSeconds: opts.clockSkewSeconds } : {}),
        }),
      kill: async (w) => {
        await w.kill('SIGKILL');
        scope.kills++;
      },
      cli: (cliArgs) =>
        runCli(cliArgs, { scope: scope.procs, ...(server ? { env: { TEMPORAL_ADDRESS: server.address } } : {}) }),
      cliRetry: (sessionId, by) =>
        ctx.cli(['recover', sessionId, 'c1', '--decision', 'retry', '--by', by, '--task-queue', taskQueue]),
      restartServer: async () => {
        if (!server) throw new Error('this cell has no server of its own to restart');
        // Closed only at the end: closing a connection with a call still retrying throws from a timer.
        retired.push(client!);
        const { port, dbFile } = server;
        server.kill('SIGKILL'); // a crash, not a shutdown: the file must carry everything
        await server.exited;
        server = await startDevServer({ port, headless: true, dbFile });
        client = await connectClient({ taskQueue, address: server.address });
        scope.restarts++;
      },
      startParked: async (sessionId = uniq('mx')) => {
        const parked = await startTurn(c(), sessionId, `cell ${cell.id}`);
        const entry = parked.ledger.at(-1);
        if (parked.state !== 'awaiting_approval' || !entry)
          throw new Error(`expected the call to wait for approval, got ${parked.state}`);
        const { executionId, toolCallId } = entry;
        current ??= {
          cell: cell.id,
          policy: cell.policy,
          peer,
          workflowId: parked.workflowId,
          args,
          executionId,
          toolCallId,
        };
        return { sessionId, turn: parked.turn, workflowId: parked.workflowId, entry };
      },
      approve: async (t) => {
        // The approver passes the digest of the arguments they were shown.
        const r = await approve(c(), {
          sessionId: t.sessionId,
          toolCallId: t.toolCallId,
          by: 'alice',
          argsDigest: t.argsDigest,
          waitMs: t.workerUp ? 10_000 : 0,
          ...(t.turn ? { turn: t.turn } : {}),
        });
        if (r.outcome === 'ignored') throw new Error(`approval ignored: ${r.why}`);
      },
      settle: async (t, expect, onPark) => {
        const reasons: string[] = [];
        for (;;) {
          const entry = await eventually(
            async () => {
              const s = await turnStatus(c(), t.workflowId);
              const e = { ...s.ledger.find((x) => x.toolCallId === t.toolCallId)!, closed: s.closed };
              const parks = e.events.filter((ev) => ev.type === 'recovery_required').length;
              return (
                (e.closed || FINAL.includes(e.state) || (e.state === 'recovery_required' && parks > reasons.length)) &&
                e
              );
            },
            `${cell.id}: the call parks or settles`,
            90_000,
          );
          if (entry.state !== 'recovery_required') break;
          const reason = String(entry.events.filter((ev) => ev.type === 'recovery_required').at(-1)?.reason);
          reasons.push(reason);
          await onPark?.();
          const i = reasons.length - 1;
          const want = expect.parks?.[i];
          if (!want) throw new Error(`parked unexpectedly (#${i + 1}): ${reason}`);
          if (!want.test(reason))
            throw new Error(`park #${i + 1}: reason ${JSON.stringify(reason)} does not match ${want}`);
          const decision = expect.human![i]!;
          const r = await recover(c(), {
            sessionId: t.sessionId,
            toolCallId: t.toolCallId,
            by: 'ops',
            decision,
            ...(t.turn ? { turn: t.turn } : {}),
            ...(decision === 'succeeded' ? { reason: 'checked the external system' } : {}),
          });
          if (r.outcome !== 'applied') throw new Error(`recover ${decision}: ${r.outcome} (${r.why ?? ''})`);
        }
        if ((expect.parks?.length ?? 0) !== reasons.length) {
          throw new Error(
            `expected ${expect.parks?.length ?? 0} park(s), saw ${reasons.length}: ${JSON.stringify(reasons)}`,
          );
        }
        return reasons;
      },
      finish: async (t) => {
        await eventually(
          async () => (await turnStatus(c(), t.workflowId)).closed,
          `${cell.id}: the turn closes`,
          60_000,
        );
        const input: CheckInput = {
          id: cell.id,
          policy: cell.policy,
          ...(t.expect === null ? {} : { expect: t.expect ?? cell.expect }),
          workflowRetry: cell.row.plan.scenario === 'workflow-retry',
          executionId: t.executionId,
          toolCallId: t.toolCallId ?? 'c1',
          args: t.args ?? args,
          foreign: t.foreign ?? 0,
          status: await turnStatus(c(), t.workflowId),
          history: await c().client.workflow.getHandle(t.workflowId).fetchHistory(),
          observation: await peer.observe(t.executionId),
          peer,
        };
        // Written before the checks, so a cell that fails them is in the independent checker's input too.
        const { executionId, toolCallId } = input;
        const call = { cell: cell.id, policy: cell.policy, peer, workflowId: t.workflowId, executionId, toolCallId };
        current = undefined;
        const exportMs = env.historyDir
          ? await exportCell(env.historyDir, c(), { ...call, args: input.args }, input)
          : 0;
        const checks = check(input);
        const all = [...(t.extraChecks ?? []), ...checks];
        if (RECORDED.has(cell.id))
          await recordHistory(t.workflowId, fixtureName(cell.id), server?.address, {
            resetRun: cell.row.plan.scenario === 'reset',
          });
        return {
          cell: cell.id,
          executionId: t.executionId,
          ms: Date.now() - started,
          workersKilled: scope.kills,
          serverRestarts: scope.restarts,
          checks: all,
          exportMs,
        };
      },
    };
    return await Promise.race([
      scenario(ctx),
      new Promise<never>((_, reject) => {
        deadline = setTimeout(() => reject(new Error(`${cell.id}: not finished within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
      }),
    ]);
  } finally {
    clearTimeout(deadline);
    if (current && client && env.historyDir) {
      const bounded = new Promise<void>((resolve) => setTimeout(resolve, 15_000).unref());
      await Promise.race([exportCell(env.historyDir, client, current).catch(() => undefined), bounded]);
    }
    await scope.stop();
    await Promise.all([client, ...retired].map((x) => x?.close().catch(() => undefined)));
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

/** F1–F11: park at approval, fault, replace the worker, answer each park, check. */
async function standard(ctx: CellContext): Promise<CellReport> {
  const { cell, peer, args, env } = ctx;
  const { plan } = cell.row;
  const point = pointFor(plan, cell.policy);
  const w1 = await ctx.worker(point ? { faults: `${point}@${peer.tool}` } : {});
  const t = await ctx.startParked();
  const { executionId } = t.entry;
  const foreign = plan.foreignUse ? await env.foreignUse!(peer.keyOf(executionId), args) : 0;
  if (plan.peerFault) await peer.arm(plan.peerFault, executionId, args);

  let w: WorkerProcess | undefined = w1;
  if (plan.downForApproval) {
    await ctx.kill(w1);
    w = undefined;
    if (plan.restartServer) await ctx.restartServer();
  }
  await ctx.approve({ sessionId: t.sessionId, toolCallId: 'c1', argsDigest: t.entry.argsDigest, workerUp: !!w });
  const extraChecks: string[] = [];
  const handle = () => ctx.c().client.workflow.getHandle(t.workflowId);
  if (point) {
    await w1.faultReached(point, 60_000);
    await ctx.kill(w1);
    w = undefined;
    extraChecks.push(await checkBarrier(point, handle(), () => peer.observe(executionId)));
  } else if (plan.killWhenHanging) {
    await peer.barrier('hanging', executionId);
    await ctx.kill(w1);
    w = undefined;
    extraChecks.push(await checkBarrier('peer.hanging', handle(), () => peer.observe(executionId)));
  } else if (plan.peerFault === 'commit-then-drop' && plan.restartServer) {
    await peer.barrier('dropped', executionId);
  }
  if (plan.restartServer && !plan.downForApproval) await ctx.restartServer();
  if (plan.forgetKeys) await env.forgetKeys!();
  if (!w) w = await ctx.worker();

  // Held requests go on once the timeout has shown: the call parked, a retry met the lock, or it closed.
  let released = !plan.release;
  const release = async () => {
    if (released) return;
    released = true;
    await peer.release(executionId);
  };
  // Only an automatic retry can meet the lock; protected calls never retry by themselves.
  const conflict =
    plan.release && peer.kind === 'http' && cell.policy === 'idempotent'
      ? peer.barrier('conflict', executionId, TIMEOUT_MS).then(release)
      : undefined;
  await ctx.settle({ ...t, toolCallId: 'c1' }, cell.expect, release);
  await release();
  await conflict;
  return ctx.finish({ workflowId: t.workflowId, executionId, foreign, extraChecks });
}
