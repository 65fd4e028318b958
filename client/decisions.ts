import { randomUUID } from 'node:crypto';
import { approveSignal, recoverSignal, rejectSignal, turnStatusQuery, turnWorkflowId } from '../workflows/definitions';
import { executionIdFor } from '../workflows/identity';
import type { DecisionKind, DecisionRecord, RecoveryDecision } from '../workflows/types';
import type { OpenWorkerClient } from './connection';
import { activeTurn, checkSessionId, OpenWorkerError } from './session';

export interface DecisionTarget {
  sessionId: string;
  toolCallId: string;
  /** Address a specific turn; default: the session's running turn. */
  turn?: number;
  by?: string;
  /** How long to wait for the turn to confirm; 0 = only deliver the signal. Default 10 s. */
  waitMs?: number;
}

export interface DecisionOutcome {
  sessionId: string;
  toolCallId: string;
  workflowId: string;
  decisionId: string;
  /** `delivered`: the signal is in the turn's history but no worker has processed it yet. */
  outcome: 'applied' | 'ignored' | 'delivered';
  why?: string;
}

const RECOVERY: readonly RecoveryDecision[] = ['retry', 'succeeded', 'failed'];

export const defaultApprover = (): string => process.env.OPENWORKER_USER ?? process.env.USER ?? 'cli';

async function send(c: OpenWorkerClient, kind: DecisionKind, target: DecisionTarget, extra: Record<string, unknown>): Promise<DecisionOutcome> {
  const sessionId = checkSessionId(target.sessionId);
  if (!target.toolCallId) throw new OpenWorkerError('a tool call id is required (see `openworker-temporal inbox`)', 'bad_input');
  let turn: number;
  if (target.turn !== undefined) {
    if (!Number.isInteger(target.turn) || target.turn < 1) throw new OpenWorkerError(`--turn must be a positive integer, got ${target.turn}`, 'bad_input');
    turn = target.turn;
  } else {
    const active = await activeTurn(c, sessionId);
    if (!active) throw new OpenWorkerError(`session '${sessionId}' has no running turn waiting for decisions; see 'openworker-temporal show ${sessionId}'`, 'not_found');
    turn = active.turn;
  }
  const workflowId = turnWorkflowId(sessionId, turn);
  const handle = c.client.workflow.getHandle(workflowId);
  const decisionId = randomUUID();
  const binding = await bindTo(c, handle, kind, { sessionId, turn, toolCallId: target.toolCallId, workflowId });
  const payload = { toolCallId: target.toolCallId, by: target.by ?? defaultApprover(), decisionId, ...binding, ...extra };
  const def = kind === 'approve' ? approveSignal : kind === 'reject' ? rejectSignal : recoverSignal;
  try {
    await handle.signal(def as typeof approveSignal, payload as never);
  } catch (err) {
    throw new OpenWorkerError(`could not deliver ${kind} to ${workflowId}: ${(err as Error).message}`, 'not_found');
  }
  const base = { sessionId, toolCallId: target.toolCallId, workflowId, decisionId };
  const until = Date.now() + (target.waitMs ?? 10_000);
  // The turn records every decision, applied or ignored, so the sender learns which it was.
  while (Date.now() < until) {
    let record: DecisionRecord | undefined;
    try {
      const status = await c.client.withDeadline(Math.min(until, Date.now() + 3000), () => handle.query(turnStatusQuery));
      record = status.decisions.find((d) => d.decisionId === decisionId);
    } catch {
      break; // no worker: the signal waits in history and is applied when one starts
    }
    if (record) return { ...base, outcome: record.outcome, ...(record.why ? { why: record.why } : {}) };
    await new Promise((r) => setTimeout(r, 150));
  }
  return { ...base, outcome: 'delivered' };
}

/**
 * Binds the decision to the call as the ledger shows it now (its execution ID; for approve its
 * arguments' digest; for recover its run), so it cannot land on another call or a later failure.
 * Without a worker to ask, it binds to the execution ID the call must have in this turn.
 */
async function bindTo(
  c: OpenWorkerClient,
  handle: ReturnType<OpenWorkerClient['client']['workflow']['getHandle']>,
  kind: DecisionKind,
  call: { sessionId: string; turn: number; toolCallId: string; workflowId: string },
): Promise<Record<string, unknown>> {
  let status;
  try {
    status = await c.client.withDeadline(Date.now() + 3000, () => handle.query(turnStatusQuery));
  } catch {
    return { executionId: executionIdFor(call.sessionId, call.turn, call.toolCallId) };
  }
  const entry = status.ledger.find((e) => e.toolCallId === call.toolCallId);
  if (!entry) {
    const pending = status.ledger.filter((e) => e.state === 'awaiting_approval' || e.state === 'recovery_required').map((e) => e.toolCallId);
    throw new OpenWorkerError(
      `no tool call '${call.toolCallId}' in ${call.workflowId}${pending.length ? `; waiting there: ${pending.join(', ')}` : ''} (see 'openworker-temporal inbox')`,
      'not_found',
    );
  }
  if (kind === 'recover' && entry.state !== 'recovery_required') {
    throw new OpenWorkerError(`call '${call.toolCallId}' is ${entry.state}, not recovery_required: a recovery decision answers a parked call (see 'openworker-temporal inbox')`, 'bad_input');
  }
  return {
    executionId: entry.executionId,
    ...(kind === 'approve' ? { argsDigest: entry.argsDigest } : {}),
    ...(kind === 'recover' && entry.runs > 0 ? { run: entry.runs } : {}),
    ...(kind === 'recover' ? { park: entry.events.filter((e) => e.type === 'recovery_required').length } : {}),
  };
}

export const approve = (c: OpenWorkerClient, t: DecisionTarget & { argsDigest?: string }): Promise<DecisionOutcome> =>
  send(c, 'approve', t, t.argsDigest ? { argsDigest: t.argsDigest } : {});

export const reject = (c: OpenWorkerClient, t: DecisionTarget & { reason?: string }): Promise<DecisionOutcome> =>
  send(c, 'reject', t, t.reason ? { reason: t.reason } : {});

export function recover(c: OpenWorkerClient, t: DecisionTarget & { decision: RecoveryDecision; result?: unknown; reason?: string }): Promise<DecisionOutcome> {
  if (!RECOVERY.includes(t.decision)) throw new OpenWorkerError(`--decision must be one of ${RECOVERY.join(', ')}, got '${t.decision}'`, 'bad_input');
  if (t.result !== undefined && t.decision !== 'succeeded') throw new OpenWorkerError('--result only goes with --decision succeeded', 'bad_input');
  return send(c, 'recover', t, { decision: t.decision, ...(t.result !== undefined ? { result: t.result } : {}), ...(t.reason ? { reason: t.reason } : {}) });
}
