import { isDeepStrictEqual } from 'node:util';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decode } from './checker';
import type { temporal } from '@temporalio/proto';
import type { OpenWorkerClient } from '../../client/connection';
import { turnStatus } from '../../client/session';
import { argsDigest } from '../../workflows/identity';
import { isProtected } from '../../workflows/policy';
import type { DecisionRecord, ReconcileAnswer, ToolActivityInput, TurnStatus } from '../../workflows/types';
import type { Policy } from './cells';
import { fixtureName } from './cells';
import type { Peer, PeerObservation } from './peers';

/**
 * The matrix's histories for the independent checker (checker/porcupine): per cell, every operation
 * on the call's execution ID with the instant it took effect, from two sources that share no code
 * with the turn: the raw Temporal history of every run of the turn, and the external system's own
 * ledger. One clock: the host's wall clock, which the Temporal server stamps events with (ns) and
 * the external systems stamp their ledgers with (ms, so each of their instants is widened to its
 * millisecond). Both run on this machine; no matrix cell skews their clocks.
 * The format is `openworker-history/1`, read by checker/porcupine/history.go.
 */

type Event = temporal.api.history.v1.IHistoryEvent;
type History = temporal.api.history.v1.IHistory;

interface HistoryOp {
  executionId: string;
  kind: 'approve' | 'reject' | 'decide' | 'invoke' | 'lookup' | 'request' | 'effect' | 'report';
  call: number;
  return: number;
  source: 'temporal' | 'peer';
  outcome?: string;
  bound?: boolean;
  decision?: string;
  by?: string;
  decisionId?: string;
  activityId?: string;
  attempt?: number;
  via?: 'activity' | 'reconcile';
  foreign?: boolean;
  event?: number;
  runId?: string;
}

interface CellHistory {
  cell: string;
  executionId: string;
  toolCallId: string;
  argsDigest: string;
  tool: string;
  policy: string;
  protected: boolean;
  args: Record<string, unknown>;
  /** Every run of the turn, oldest first (a reset or retried run's predecessors too). */
  runs: { runId: string; history: History }[];
  /** The latest run's decision audit: which decisions applied. */
  decisions: DecisionRecord[];
  observation: PeerObservation;
  peer: Peer;
}

const MS = 1_000_000n;
/** The end of a run that never closed: the checker's horizon. */
const FOREVER = -1n;
const nsOf = (ev: Event): bigint =>
  BigInt(String(ev.eventTime?.seconds ?? 0)) * 1_000_000_000n + BigInt(ev.eventTime?.nanos ?? 0);
const msOf = (iso: string): bigint => BigInt(Date.parse(iso)) * MS;

/** A new directory for one matrix run's histories: under $OPENWORKER_HISTORY_DIR if set (kept), else a temporary one. */
export function newHistoryDir(): string {
  const root = process.env.OPENWORKER_HISTORY_DIR;
  if (!root) return mkdtempSync(join(tmpdir(), 'openworker-histories-'));
  mkdirSync(root, { recursive: true });
  return mkdtempSync(join(root, 'matrix-'));
}

/** The runs before `history`'s: the run a reset started from, or the one a retry or continue-as-new followed. */
function previousRunId(history: History): string | undefined {
  for (const ev of history.events ?? []) {
    const failed = ev.workflowTaskFailedEventAttributes;
    if (failed?.baseRunId && failed.newRunId) return failed.baseRunId;
  }
  return history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
}

const LATEST = 'latest';

/** Every run of the turn, oldest first, following previousRunId from the latest (whose history is given). */
async function runsOf(c: OpenWorkerClient, workflowId: string, latest: History): Promise<CellHistory['runs']> {
  const runs: CellHistory['runs'] = [{ runId: LATEST, history: latest }];
  for (let prev = previousRunId(latest); prev && runs.length < 5; prev = previousRunId(runs[0]!.history))
    runs.unshift({ runId: prev, history: await c.client.workflow.getHandle(workflowId, prev).fetchHistory() });
  return runs;
}

type Timed = Omit<HistoryOp, 'call' | 'return'> & { call: bigint; return: bigint };

/** The operations of one run's history on the call (and decisions naming other calls). */
function temporalOps(h: CellHistory, runId: string, history: History): Timed[] {
  const events = history.events ?? [];
  const out: Timed[] = [];
  const end = events.length ? nsOf(events.at(-1)!) : 0n;
  const scheduled = new Map<string, { type: string; input: ToolActivityInput; at: bigint; id: string }>();
  const started = new Map<string, number>();
  for (const ev of events) {
    const at = nsOf(ev);
    const base = { source: 'temporal' as const, event: Number(ev.eventId), runId };
    const sig = ev.workflowExecutionSignaledEventAttributes;
    if (sig) out.push(...decisionOps(h, sig, { ...base, at, end }));
    const sch = ev.activityTaskScheduledEventAttributes;
    if (sch && ['executeTool', 'reconcileTool'].includes(sch.activityType?.name ?? '')) {
      const input = decode(sch.input)[0] as ToolActivityInput;
      scheduled.set(String(ev.eventId), { type: sch.activityType!.name!, input, at, id: sch.activityId! });
    }
    const st = ev.activityTaskStartedEventAttributes;
    if (st) started.set(String(st.scheduledEventId), st.attempt ?? 1);
    const closed =
      ev.activityTaskCompletedEventAttributes ??
      ev.activityTaskFailedEventAttributes ??
      ev.activityTaskTimedOutEventAttributes ??
      ev.activityTaskCanceledEventAttributes;
    const s = closed && scheduled.get(String(closed.scheduledEventId));
    if (!s) continue;
    scheduled.delete(String(closed.scheduledEventId));
    const outcome = ev.activityTaskCompletedEventAttributes
      ? 'completed'
      : ev.activityTaskFailedEventAttributes
        ? 'failed'
        : ev.activityTaskTimedOutEventAttributes
          ? 'timed_out'
          : 'canceled';
    const run = { ...base, executionId: s.input.executionId, activityId: s.id };
    if (s.type === 'executeTool') {
      const attempt = started.get(String(closed.scheduledEventId)) ?? 1;
      out.push({ ...run, kind: 'invoke', call: s.at, return: at, outcome, attempt });
      if (outcome === 'completed') out.push({ ...run, kind: 'report', call: at, return: at, via: 'activity' });
    } else {
      const answer =
        outcome === 'completed'
          ? (decode(ev.activityTaskCompletedEventAttributes!.result)[0] as ReconcileAnswer).status
          : outcome;
      out.push({ ...run, kind: 'lookup', call: s.at, return: at, outcome: answer });
      if (answer === 'applied') out.push({ ...run, kind: 'report', call: at, return: at, via: 'reconcile' });
    }
  }
  // A run still open when the turn closed (none should be) may still act: until the end of time.
  for (const [, s] of scheduled)
    if (s.type === 'executeTool')
      out.push({
        source: 'temporal',
        runId,
        executionId: s.input.executionId,
        activityId: s.id,
        kind: 'invoke',
        call: s.at,
        return: FOREVER,
        outcome: 'open',
      });
  return out;
}

/** A decision signal's operations (a batch has several): when it arrived, and until the turn applied it. */
function decisionOps(
  h: CellHistory,
  sig: temporal.api.history.v1.IWorkflowExecutionSignaledEventAttributes,
  at: { source: 'temporal'; event: number; runId: string; at: bigint; end: bigint },
): Timed[] {
  if (!['approve', 'reject', 'recover', 'decisions'].includes(sig.signalName ?? '')) return [];
  const payload = decode(sig.input)[0] as Record<string, unknown>;
  const items = sig.signalName === 'decisions' ? (payload.decisions as Record<string, unknown>[]) : [payload];
  const { at: arrived, end, ...base } = at;
  return items.map((d) => {
    const kind = String(d.kind ?? sig.signalName);
    const executionId = String(d.executionId ?? (d.toolCallId === h.toolCallId ? h.executionId : `?${d.toolCallId}`));
    // The audit is the latest run's: an earlier run's signal (a reset re-applies it, with the same ID) stays unknown.
    const rec =
      d.decisionId && at.runId === LATEST ? h.decisions.find((x) => x.decisionId === d.decisionId) : undefined;
    // Applied when the turn's task saw it: the audit's time (workflow time, ms); else until the run's end.
    const applied = rec ? msOf(rec.at) + MS - 1n : end;
    return {
      ...base,
      executionId,
      kind: kind === 'recover' ? 'decide' : (kind as 'approve' | 'reject'),
      call: arrived,
      return: applied > arrived ? applied : arrived,
      outcome: rec?.outcome ?? 'unknown',
      ...(kind === 'approve'
        ? { bound: executionId === h.executionId && (d.argsDigest === undefined || d.argsDigest === h.argsDigest) }
        : {}),
      ...(typeof d.decision === 'string' ? { decision: d.decision } : {}),
      ...(d.by ? { by: String(d.by) } : {}),
      ...(d.decisionId ? { decisionId: String(d.decisionId) } : {}),
    };
  });
}

/** The external system's ledger for the key: requests and effects, this call's or another caller's. */
function peerOps(h: CellHistory): Timed[] {
  const mineEffect = h.peer.effectOf(h.args);
  const payload = h.peer.requestPayload(h.args);
  return h.observation.timeline.map((e) => {
    const call = msOf(e.at);
    const until = e.until ? msOf(e.until) : call;
    const foreign =
      e.kind === 'effect' ? !isDeepStrictEqual(e.body, mineEffect) : payload !== null && e.payload !== payload;
    return {
      executionId: h.executionId,
      kind: e.kind,
      source: 'peer',
      call,
      return: (until > call ? until : call) + MS - 1n,
      ...(e.outcome ? { outcome: e.outcome } : {}),
      ...(foreign ? { foreign } : {}),
    };
  });
}

/** One call of a cell, as the exporter needs it. */
export interface CellCall {
  cell: string;
  policy: Policy;
  peer: Peer;
  workflowId: string;
  executionId: string;
  toolCallId: string;
  args: Record<string, unknown>;
}

/**
 * Reads what `have` lacks (the turn's status, its latest history, the peer's ledger) and every
 * earlier run, then writes the call's history; returns the milliseconds it took. A turn still
 * running (a cell that failed before its end) gives a prefix of its history: the model checks prefixes.
 */
export async function exportCell(
  dir: string,
  c: OpenWorkerClient,
  call: CellCall,
  have: { status?: TurnStatus; history?: History; observation?: PeerObservation } = {},
): Promise<number> {
  const started = Date.now();
  const history = have.history ?? (await c.client.workflow.getHandle(call.workflowId).fetchHistory());
  exportHistory(
    {
      ...call,
      argsDigest: argsDigest(call.args),
      tool: call.peer.tool,
      protected: isProtected('external', call.policy),
      runs: await runsOf(c, call.workflowId, history),
      decisions: (have.status ?? (await turnStatus(c, call.workflowId))).decisions,
      observation: have.observation ?? (await call.peer.observe(call.executionId)),
    },
    join(dir, `${fixtureName(call.cell)}.json`),
  );
  return Date.now() - started;
}

/** Builds the cell's history and writes it to `path`. */
function exportHistory(h: CellHistory, path: string): void {
  const seen = new Set<string>();
  const timed = [...h.runs.flatMap((r) => temporalOps(h, r.runId, r.history)), ...peerOps(h)].filter((op) => {
    // A reset run starts with copies of its base run's first events: count each once.
    const key = JSON.stringify({ ...op, runId: undefined, event: undefined, call: String(op.call), return: '' });
    return !seen.has(key) && !!seen.add(key);
  });
  const first = timed.reduce((m, op) => (op.call < m ? op.call : m), timed[0]?.call ?? 0n);
  const origin = (first / 1_000_000_000n - 1n) * 1_000_000_000n;
  const ops: HistoryOp[] = timed
    .sort((a, b) => (a.call < b.call ? -1 : a.call > b.call ? 1 : 0))
    .map((op) => ({
      ...op,
      call: Number(op.call - origin),
      return: op.return === FOREVER ? Number.MAX_SAFE_INTEGER : Number(op.return - origin),
    }));
  const doc = {
    format: 'openworker-history/1',
    cell: h.cell,
    clock: 'host wall clock (Temporal event times, external systems ledgers), ns after origin',
    origin: new Date(Number(origin / MS)).toISOString(),
    calls: [
      { executionId: h.executionId, tool: h.tool, policy: h.policy, needsApproval: true, protected: h.protected },
    ],
    ops,
  };
  writeFileSync(path, JSON.stringify(doc, null, 1));
}
