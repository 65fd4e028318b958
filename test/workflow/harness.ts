import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { contextStoreOn } from '../../runtime/contextStore';
import { fileDriver } from '../../runtime/payloadStorage';
import type { WorkflowHandle } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createActivities } from '../../activities';
import { faultSinks } from '../../activities/faults';
import type { Script } from '../../activities/models/scripted';
import { scriptedModel } from '../../activities/models/scripted';
import { createRegistry } from '../../activities/registry';
import type { Tool } from '../../activities/tool';
import type { DevServer } from '../../dev/server';
import { startDevServer } from '../../dev/server';
import { workflowSource } from '../../worker/worker';
import { taskFailuresIn } from '../support/eventCounts';
import { recordHistory } from '../support/histories';
import { invariantViolations } from '../../workflows/ledger';
import { turnStatusQuery } from '../../workflows/definitions';
import type { TurnResult, TurnStatus } from '../../workflows/types';

// The workflow tier: the real turn workflow and activities in this process, against one in-memory
// dev server per file (the time-skipping test server cannot register the turn's search attributes).
// Tools are in-memory and the model is a script, so a scenario takes a second, not a worker spawn.

// Activity failures are the scenarios' point; keep them out of the output (under npm test the hooks
// have installed the runtime already).
try {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
} catch {
  // already installed
}

export interface Tier {
  client: Client;
  /** Starts a turn of a fresh session; the worker is not running yet. */
  start(script: Script['steps'], id?: string): Promise<WorkflowHandle>;
  /** With OPENWORKER_RECORD_HISTORIES=1, saves the turn's history as a replay fixture. */
  record(h: WorkflowHandle, name: string): Promise<void>;
  /** Runs an in-process worker (no cache: every task replays the history) until `fn` settles. */
  withWorker<T>(tools: Tool[], script: Script['steps'], fn: () => Promise<T>): Promise<T>;
}

let seq = 0;

/** Registers before/after hooks for one dev server and returns the tier's helpers. */
export function useWorkflowTier(): Tier {
  let server: DevServer | undefined;
  let connection: Connection | undefined;
  let native: NativeConnection | undefined;
  const tier = {} as Tier;
  const taskQueue = `workflow-tier-${process.pid}`;
  // Model calls send the transcript by reference: the tier's store is a directory of its own.
  const contextDir = mkdtempSync(join(tmpdir(), 'workflow-tier-context-'));
  const contextStore = contextStoreOn(() => fileDriver(contextDir));
  before(async function () {
    this.timeout(60_000);
    server = await startDevServer({ port: 0, headless: true });
    connection = await Connection.connect({ address: server.address });
    native = await NativeConnection.connect({ address: server.address });
    tier.client = new Client({ connection });
  });
  after(async function () {
    this.timeout(30_000);
    await native?.close();
    await connection?.close();
    rmSync(contextDir, { recursive: true, force: true });
    await server?.stop();
  });
  tier.start = (steps, id = `wt-${process.pid}-${++seq}`) =>
    tier.client.workflow.start('agentTurn', {
      taskQueue,
      workflowId: id,
      args: [{ sessionId: id, turn: 1, message: 'go', history: [] }],
    });
  tier.record = (h, name) => recordHistory(h.workflowId, name, server!.address);
  tier.withWorker = async (tools, steps, fn) => {
    const worker = await Worker.create({
      connection: native!,
      taskQueue,
      ...workflowSource(),
      activities: createActivities({ registry: createRegistry(tools), model: scriptedModel({ steps }), contextStore }),
      sinks: faultSinks(),
      maxCachedWorkflows: 0,
    });
    return worker.runUntil(fn);
  };
  return tier;
}

/** Polls the turn's status until `pred` holds and is recorded in history; bounded. */
export async function until(
  h: WorkflowHandle,
  pred: (s: TurnStatus) => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<TurnStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await h.query(turnStatusQuery);
    // A query can be answered from a task the worker then never completes (it is shutting down):
    // what it saw is only history once no workflow task is pending.
    if (pred(s) && !(await h.describe()).raw.pendingWorkflowTask) return s;
    if (Date.now() > deadline)
      throw new Error(
        `${what}: not within ${timeoutMs} ms; state ${s.state}, ledger ${JSON.stringify(s.ledger.map((e) => [e.toolCallId, e.state]))}`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The liveness promise, checked after every scenario: no workflow task failed, no ledger invariant broke. */
export async function assertLive(h: WorkflowHandle, result?: TurnResult | TurnStatus): Promise<void> {
  const failed = taskFailuresIn((await h.fetchHistory()).events ?? []);
  if (failed.length) throw new Error(`workflow task failed: ${failed.join('; ')}`);
  const violations = result ? invariantViolations(result.ledger) : [];
  if (violations.length) throw new Error(`ledger invariant violated: ${violations.join('; ')}`);
}
