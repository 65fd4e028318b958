import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FAULT_REPORT_PREFIX } from '../../activities/faults';
import { connectClient } from '../../client/connection';
import type { OpenWorkerClient } from '../../client/connection';
import { approve, recover } from '../../client/decisions';
import type { RecoveryDecision } from '../../workflows/protocol';
import { messageTurn, sendMessage, turnStatus } from '../../client/session';
import { TAU2_SERVER, tau2Python } from '../../dev/tau2/paths';
import type { Case } from './cases';
import { MCP_SERVER, callId, scriptSteps } from './cases';
import { dbMatches, writesIn } from './env';
import type { Watched } from './procs';
import { startWatched } from './procs';

// One case of the tau2 bench: a task's reference actions issued by a scripted model through a worker,
// one fault on one write, an operator that decides recoveries from the airline system's own record,
// and the final database compared with tau2's reference. `openworker` is this project's worker;
// `naive` is the idiomatic Temporal loop (bench/idiomaticWorkflow.ts: each tool call an activity that
// Temporal retries by itself) on the same MCP server, the same script and the same schedule.

const CLI = join(__dirname, '..', '..', '..', 'bin', 'openworker-temporal.js');
const NAIVE_WORKER = join(__dirname, 'naiveWorker.js');
const OPERATOR = 'tau2-operator';
const CASE_TIMEOUT_MS = 180_000;

export const SYSTEMS = ['openworker', 'naive'] as const;
export type System = (typeof SYSTEMS)[number];

export interface CaseEnv {
  address: string;
  /** Where each case gets a directory of its own. */
  dir: string;
  /** tau2's classification of the airline tools (true: writes). */
  tools: Record<string, boolean>;
  /** SIGKILLs the Temporal server and starts it again on its database file (the temporal@ faults). */
  restartTemporal?: () => Promise<void>;
}

export interface CaseResult {
  task: string;
  kind: string;
  system: System;
  dbMatch: boolean;
  /** Write calls a person approved (once each). */
  approved: number;
  /** Write calls the airline server executed (applied, or refused by tau2 itself). */
  writes: number;
  /** Executions beyond the first of one approved call. */
  duplicates: number;
  turnCompleted: boolean;
  /** The operator's recovery decisions, in order. */
  recoveries: RecoveryDecision[];
  ms: number;
  error?: string;
}

interface Setup {
  dir: string;
  state: string;
  script: string;
  mcp: string;
  taskQueue: string;
  release: string;
}

/** The case's files: the airline state, the script, and the MCP config with the server's fault armed. */
function setUp(c: Case, system: System, env: CaseEnv, serverFault?: string): Setup {
  const name = `${system}-${c.task.id}-${c.kind.replace('@', '-')}`;
  const dir = join(env.dir, name);
  mkdirSync(dir, { recursive: true });
  const s: Setup = {
    dir,
    state: join(dir, 'state.json'),
    script: join(dir, 'script.json'),
    mcp: join(dir, 'mcp.json'),
    taskQueue: `tau2-${name}-${Date.now()}`,
    release: join(dir, 'release'),
  };
  writeFileSync(s.script, JSON.stringify({ steps: scriptSteps(c.task) }));
  const tools = Object.fromEntries(
    Object.entries(env.tools).map(([tool, writes]) => [
      tool,
      writes ? { effect: 'external', approval: true, recovery: 'manual' } : { effect: 'read', approval: false },
    ]),
  );
  const fault = serverFault
    ? { TAU2_FAULT: serverFault, TAU2_FAULT_ONCE: join(dir, 'fault-fired'), TAU2_FAULT_RELEASE: s.release }
    : {};
  const config = {
    servers: {
      [MCP_SERVER]: {
        command: tau2Python(),
        args: [TAU2_SERVER, '--state', s.state],
        env: { LOGURU_LEVEL: 'ERROR', ...fault },
        // A killed worker's call is noticed by its heartbeat timeout, and a person's retry first waits
        // out the last attempt's window (start-to-close + 2 s): the airline answers in milliseconds, so
        // 2 s and 15 s instead of the defaults' 10 s and 2 minutes keep a case short.
        defaults: { heartbeatMs: 2000, timeoutMs: 15_000 },
        tools,
      },
    },
  };
  writeFileSync(s.mcp, JSON.stringify(config, null, 2));
  return s;
}

const SERVER_FAULT = /OPENWORKER_FAULT tau2\.\w+ (\S+) (\d+)/;

/** Where the airline server stops for a case's fault: the worker kinds use the worker's own points (ours). */
function serverFaultOf(c: Case, system: System): string | undefined {
  if (c.kind === 'none') return undefined;
  if (c.kind.startsWith('mcp@') || c.kind.startsWith('temporal@')) return `after_apply:${c.nthWrite}`;
  if (system === 'openworker') return undefined;
  // The naive loop has no dispatch marker: before and after dispatch are both "not yet applied" to it.
  return c.kind === 'worker@after_execute' ? `after_apply:${c.nthWrite}` : `before_apply:${c.nthWrite}`;
}

/** Acts on the fault once reached: kill the worker (a new one takes over), kill the MCP server, or restart Temporal. */
async function injectFault(
  c: Case,
  system: System,
  s: Setup,
  env: CaseEnv,
  current: () => Watched,
  restartWorker: () => Promise<void>,
): Promise<void> {
  if (c.kind === 'none') return;
  const worker = current();
  if (c.kind.startsWith('worker@') && system === 'openworker') {
    const point = c.kind.slice('worker@'.length).replace(/\./g, '\\.');
    await worker.waitFor(new RegExp(`${FAULT_REPORT_PREFIX} tool\\.${point} \\S+`), CASE_TIMEOUT_MS);
    await restartWorker();
    return;
  }
  const m = await worker.waitFor(SERVER_FAULT, CASE_TIMEOUT_MS);
  if (c.kind.startsWith('worker@')) await restartWorker();
  else if (c.kind.startsWith('mcp@')) process.kill(Number(m[2]), 'SIGKILL');
  else {
    if (!env.restartTemporal) throw new Error(`${c.kind} needs a Temporal server the bench may restart`);
    await env.restartTemporal();
  }
  writeFileSync(s.release, '');
}

/** What a person decides from the airline system's record of the call's execution ID. */
export function operatorDecision(state: string, executionId: string): { decision: RecoveryDecision; reason: string } {
  const ran = writesIn(state).filter((w) => w.executionId === executionId);
  if (!ran.length) return { decision: 'retry', reason: 'the airline system has no write with this execution ID' };
  if (ran.some((w) => w.ok)) return { decision: 'succeeded', reason: 'the airline system applied it' };
  return { decision: 'failed', reason: 'the airline system refused it' };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs one case; never throws for the case's own failures (they are in `error`). */
export async function runCase(c: Case, system: System, env: CaseEnv): Promise<CaseResult> {
  const s = setUp(c, system, env, serverFaultOf(c, system));
  const live = new Set<Watched>();
  const started: Watched[] = [];
  const writeIds = c.task.actions.flatMap((a, i) => (a.write ? [callId(i)] : []));
  const result: CaseResult = {
    task: c.task.id,
    kind: c.kind,
    system,
    dbMatch: false,
    approved: 0,
    writes: 0,
    duplicates: 0,
    turnCompleted: false,
    recoveries: [],
    ms: 0,
  };
  const workerFaults =
    system === 'openworker' && c.kind.startsWith('worker@')
      ? `tool.${c.kind.slice('worker@'.length)}@${MCP_SERVER}__${c.task.actions[c.action]!.name}`
      : '';
  const start = async (faults: string): Promise<Watched> => {
    const childEnv = { ...process.env, TEMPORAL_ADDRESS: env.address, OPENWORKER_FAULTS: faults };
    const w = await (system === 'openworker'
      ? startWatched(
          process.execPath,
          [CLI, 'worker', '--task-queue', s.taskQueue, '--model', `scripted:${s.script}`, '--mcp', s.mcp],
          childEnv,
          /worker ready/,
          live,
        )
      : startWatched(
          process.execPath,
          [NAIVE_WORKER, s.taskQueue, s.script, s.mcp],
          childEnv,
          /BENCH_WORKER_READY/,
          live,
        ));
    started.push(w);
    return w;
  };
  let client: OpenWorkerClient | undefined;
  try {
    let worker = await start(workerFaults);
    client = await connectClient({ address: env.address, taskQueue: s.taskQueue });
    const started = Date.now();
    let fault: Error | undefined;
    const restartWorker = async (): Promise<void> => {
      await worker.kill();
      worker = await start('');
    };
    const injected = injectFault(c, system, s, env, () => worker, restartWorker).catch((err: Error) => {
      fault = err;
    });
    const drive = system === 'openworker' ? driveOurs : driveNaive;
    await drive(client, c, s, writeIds, result, () => fault);
    result.ms = Date.now() - started;
    if (c.kind !== 'none' && !fault) await Promise.race([injected, sleep(1000)]);
    if (fault) throw fault;
    const writes = writesIn(s.state);
    result.writes = writes.length;
    const perCall = new Map<string, number>();
    for (const w of writes) perCall.set(String(w.executionId), (perCall.get(String(w.executionId)) ?? 0) + 1);
    result.duplicates = [...perCall.values()].reduce((n, k) => n + k - 1, 0);
    result.dbMatch = dbMatches(c.task.id, s.state);
  } catch (err) {
    result.error = (err as Error).message.split('\n')[0];
  } finally {
    await client?.close().catch(() => undefined);
    await Promise.all([...live].map((w) => w.kill()));
    // Each worker's output (with its MCP server's stderr) stays with the case, for a case that failed.
    started.forEach((w, i) => writeFileSync(join(s.dir, `worker-${i + 1}.log`), w.output()));
  }
  return result;
}

type Drive = (
  c: OpenWorkerClient,
  k: Case,
  s: Setup,
  writeIds: string[],
  r: CaseResult,
  fault: () => Error | undefined,
) => Promise<void>;

/** This project's turn: approve each write when it asks, decide each recovery_required as the operator. */
const driveOurs: Drive = async (client, k, s, _writeIds, r, fault) => {
  const sessionId = `tau2-${k.task.id}-${k.kind.replace('@', '-')}`;
  const sent = await sendMessage(client, { sessionId, text: `tau2 airline task ${k.task.id}` });
  const decided = new Set<string>();
  const deadline = Date.now() + CASE_TIMEOUT_MS;
  let workflowId: string | undefined;
  let lastError = '';
  for (;;) {
    if (fault()) return;
    if (Date.now() > deadline) throw new Error(`turn not done within ${CASE_TIMEOUT_MS} ms (${lastError})`);
    try {
      workflowId ??= (await messageTurn(client, sessionId, sent.messageId)).turn?.workflowId;
      const t = workflowId ? await turnStatus(client, workflowId) : undefined;
      if (t?.closed) {
        r.turnCompleted = t.state === 'completed';
        return;
      }
      for (const e of t?.ledger ?? []) {
        const key = `${e.toolCallId}:${e.state}:${e.runs}`;
        if (decided.has(key)) continue;
        if (e.state === 'awaiting_approval') {
          await approve(client, { sessionId, toolCallId: e.toolCallId, by: OPERATOR, waitMs: 0 });
          r.approved++;
        } else if (e.state === 'recovery_required') {
          const { decision, reason } = operatorDecision(s.state, e.executionId);
          await recover(client, {
            sessionId,
            toolCallId: e.toolCallId,
            decision,
            reason,
            by: OPERATOR,
            waitMs: 0,
            ...(decision === 'succeeded' ? { result: 'applied, per the airline system' } : {}),
          });
          r.recoveries.push(decision);
        } else continue;
        decided.add(key);
      }
    } catch (err) {
      // The Temporal server restarting, a worker starting: try again shortly.
      lastError = (err as Error).message.split('\n')[0]!;
    }
    await sleep(150);
  }
};

/** The idiomatic loop: every write approved up front by one signal; Temporal retries what fails. */
const driveNaive: Drive = async (client, k, _s, writeIds, r, fault) => {
  const handle = await client.client.workflow.start('idiomaticTurn', {
    taskQueue: client.taskQueue,
    workflowId: `tau2-naive-${k.task.id}-${k.kind.replace('@', '-')}-${Date.now()}`,
    args: [`tau2 airline task ${k.task.id}`, k.task.actions.length + 1, '5 seconds'],
  });
  await handle.signal('approve', { toolCallIds: writeIds, approved: true });
  r.approved = writeIds.length;
  const deadline = Date.now() + CASE_TIMEOUT_MS;
  for (;;) {
    if (fault()) return;
    if (Date.now() > deadline) throw new Error(`naive turn not done within ${CASE_TIMEOUT_MS} ms`);
    try {
      const d = await handle.describe();
      if (d.status.name === 'COMPLETED') {
        r.turnCompleted = true;
        return;
      }
      if (d.status.name !== 'RUNNING') return;
    } catch {
      // the Temporal server restarting
    }
    await sleep(150);
  }
};
