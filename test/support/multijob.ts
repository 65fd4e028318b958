import { randomUUID } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { OpenWorkerClient } from '../../client/connection';
import { grant } from '../../client/grants';
import { turnStatus } from '../../client/session';
import {
  approveSignal,
  grantsSignal,
  recoverSignal,
  rejectSignal,
  revokeSignal,
  sessionWorkflowId,
} from '../../workflows/definitions';
import { pendingFence } from '../../workflows/ledger';
import type { LedgerEntry, RecoveryDecision, TurnStatus } from '../../workflows/types';

/**
 * The jobs of one workflow activation (issue #14): what humans, the session and a stray activity
 * send to a turn while no worker runs, each through a raw Temporal client so that all of them wait
 * in history for the next workflow task.
 */

export type Job =
  | { kind: 'approve' }
  | { kind: 'reject' }
  | { kind: 'recover'; decision: RecoveryDecision; skipFence: boolean }
  | { kind: 'cancel' }
  /** A session grant (client/grants.ts), a raw revoke of it to the session, or a raw `grants` list to the turn. */
  | { kind: 'grant'; via: 'session' | 'revoke' | 'raw' };

export interface Target {
  sessionId: string;
  workflowId: string;
  /** The call as the senders last saw it (while a worker still answered). */
  entry: LedgerEntry;
  /** Bind decisions to the execution / digest / run / park, as client/decisions.ts does; raw senders may not. */
  bound: boolean;
}

export interface Sent {
  /** decisionId → what it asked for (approve, reject, recover:<decision>). */
  decisions: Map<string, string>;
}

type Event = temporal.api.history.v1.IHistoryEvent;

/** Sends the jobs in order; each lands before the next is sent. */
export async function sendJobs(c: OpenWorkerClient, t: Target, jobs: readonly Job[], sent: Sent): Promise<void> {
  const handle = c.client.workflow.getHandle(t.workflowId);
  const session = c.client.workflow.getHandle(sessionWorkflowId(t.sessionId));
  const { entry } = t;
  const parks = entry.events.filter((e) => e.type === 'recovery_required').length;
  let grantId: string | undefined;
  for (const job of jobs) {
    const decisionId = randomUUID();
    const base = {
      toolCallId: entry.toolCallId,
      by: 'alice',
      decisionId,
      ...(t.bound ? { executionId: entry.executionId } : {}),
    };
    switch (job.kind) {
      case 'approve':
        sent.decisions.set(decisionId, 'approve');
        await handle.signal(approveSignal, { ...base, ...(t.bound ? { argsDigest: entry.argsDigest } : {}) });
        break;
      case 'reject':
        sent.decisions.set(decisionId, 'reject');
        await handle.signal(rejectSignal, { ...base, reason: 'multijob' });
        break;
      case 'recover': {
        sent.decisions.set(decisionId, `recover:${job.decision}`);
        const binding = t.bound
          ? { ...(entry.runs > 0 ? { run: entry.runs } : {}), ...(parks > 0 ? { park: parks } : {}) }
          : {};
        await handle.signal(recoverSignal, {
          ...base,
          ...binding,
          decision: job.decision,
          ...(job.skipFence && job.decision === 'retry' ? { skipFence: true } : {}),
        });
        break;
      }
      case 'cancel':
        await handle.cancel();
        break;
      case 'grant':
        if (job.via === 'raw') {
          await handle.signal(grantsSignal, {
            version: 1 + jobs.indexOf(job),
            grants: [
              { id: `g-raw-${decisionId.slice(0, 6)}`, tool: entry.tool, by: 'mallory', at: new Date().toISOString() },
            ],
          });
          break;
        }
        if (job.via === 'session' || !grantId)
          grantId = (await grant(c, { sessionId: t.sessionId, tool: entry.tool, by: 'carol', waitMs: 0 })).grant.id;
        if (job.via === 'revoke') await session.signal(revokeSignal, { grantId, by: 'carol' });
        break;
    }
  }
}

const UNHANDLED_COMMAND = temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND;

/**
 * Every WorkflowTaskFailed in a history, with its cause and message. UnhandledCommand is not the
 * workflow's failure: the server refused a completion because a signal (here: the session's
 * forwarded grants) arrived meanwhile, and the next task carries it; only a run of them would be.
 */
export function taskFailures(events: readonly Event[]): string[] {
  const failed = events.flatMap((ev) => {
    const f = ev.workflowTaskFailedEventAttributes;
    return f
      ? [
          {
            unhandled: f.cause === UNHANDLED_COMMAND,
            text: `event ${String(ev.eventId)}: cause ${String(f.cause)} ${f.failure?.message ?? ''}`.slice(0, 600),
          },
        ]
      : [];
  });
  const real = failed.filter((f) => !f.unhandled);
  return (real.length ? real : failed.length > 3 ? failed : []).map((f) => f.text);
}

/** The raw history of a workflow (of its latest run, or of `runId`). */
export const historyOf = async (c: OpenWorkerClient, workflowId: string, runId?: string): Promise<Event[]> =>
  (await c.client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];

/** Whether the last activity result in the history has been processed by a completed workflow task. */
export function resultProcessed(events: readonly Event[]): boolean {
  const result = events
    .filter(
      (e) =>
        e.activityTaskTimedOutEventAttributes ||
        e.activityTaskFailedEventAttributes ||
        e.activityTaskCompletedEventAttributes,
    )
    .at(-1);
  return (
    !!result && events.some((e) => e.workflowTaskCompletedEventAttributes && Number(e.eventId) > Number(result.eventId))
  );
}

/** Whether an activity result (here: the dead worker's attempt timing out) waits in the history for a task. */
export const resultWaiting = (events: readonly Event[]): boolean =>
  events.some((e) => e.activityTaskTimedOutEventAttributes) && !resultProcessed(events);

/** Whether a worker completed a workflow task after every signal and cancel request in the history. */
export function processedAll(events: readonly Event[]): boolean {
  const last = (pred: (e: Event) => unknown) => Math.max(0, ...events.filter(pred).map((e) => Number(e.eventId)));
  const sentAt = last(
    (e) => e.workflowExecutionSignaledEventAttributes || e.workflowExecutionCancelRequestedEventAttributes,
  );
  return last((e) => e.workflowTaskCompletedEventAttributes) > sentAt;
}

export type Waiting = 'closed' | 'approval' | 'recovery' | 'fence';

/** What the turn waits for, if it waits for a human with a reason; undefined while it works. */
export function waitingFor(s: TurnStatus & { closed: boolean }, toolCallId: string): Waiting | undefined {
  if (s.closed) return 'closed';
  // A query answered while the turn completes (describe still said running) shows its final state.
  if (['completed', 'cancelled', 'failed'].includes(s.state)) return undefined;
  const e = s.ledger.find((x) => x.toolCallId === toolCallId);
  if (e?.state === 'awaiting_approval') return 'approval';
  if (e?.state !== 'recovery_required') return undefined;
  if (pendingFence(e)) return 'fence';
  const reason = e.events.filter((ev) => ev.type === 'recovery_required').at(-1)?.reason;
  return typeof reason === 'string' && reason ? 'recovery' : undefined;
}

/**
 * Polls the turn until a worker has processed every job and the turn has closed or waits for a
 * human with a reason. A workflow task failure fails at once: it would replay forever.
 */
export async function settle(
  c: OpenWorkerClient,
  t: { sessionId: string; workflowId: string; toolCallId: string },
  what: string,
  timeoutMs = 60_000,
) {
  const deadline = Date.now() + timeoutMs;
  let last = 'nothing yet';
  for (;;) {
    const histories = await Promise.all([t.workflowId, sessionWorkflowId(t.sessionId)].map((id) => historyOf(c, id)));
    const failures = histories.flatMap(taskFailures);
    if (failures.length)
      throw new Error(`${what}: workflow task failed (a wedge: it replays forever): ${failures.join(' | ')}`);
    if (processedAll(histories[0]!)) {
      const s = await c.client
        .withDeadline(Date.now() + 5_000, () => turnStatus(c, t.workflowId))
        .catch((err: Error) => err);
      if (!(s instanceof Error)) {
        const w = waitingFor(s, t.toolCallId);
        if (w) return { status: s, waiting: w, history: histories[0]! };
        last = `${s.state}: ${JSON.stringify(s.ledger.find((x) => x.toolCallId === t.toolCallId)?.events.slice(-3))}`;
      } else last = s.message;
    }
    if (Date.now() > deadline)
      throw new Error(
        `${what}: neither closed nor waiting for a human with a reason within ${timeoutMs} ms; last: ${last}`,
      );
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** How many history events the jobs add to the turn's own history (the session forwards grants later; an update is no event until accepted). */
export const jobEvents = (jobs: readonly Job[]): number =>
  jobs.filter((j) => ['approve', 'reject', 'recover'].includes(j.kind) || (j.kind === 'grant' && j.via === 'raw'))
    .length + (jobs.some((j) => j.kind === 'cancel') ? 1 : 0);

/** Whether all `expected` job events after event `after` were in history before the next workflow task started. */
export function inOneTask(events: readonly Event[], after: number, expected: number): boolean {
  const started = events.find((e) => e.workflowTaskStartedEventAttributes && Number(e.eventId) > after);
  const upTo = started ? Number(started.eventId) : Infinity;
  const jobs = events.filter(
    (e) =>
      Number(e.eventId) > after &&
      Number(e.eventId) < upTo &&
      (e.workflowExecutionSignaledEventAttributes || e.workflowExecutionCancelRequestedEventAttributes),
  );
  return jobs.length === expected;
}

const decode = (payloads: temporal.api.common.v1.IPayloads | null | undefined): unknown[] =>
  (payloads?.payloads ?? []).map((p) => defaultPayloadConverter.fromPayload(p as never));

/** A compact listing of a history for a failure report: id, type, and what a signal or update carried. */
export function describeHistory(events: readonly Event[]): string {
  return events
    .map((e) => {
      const type =
        Object.keys(e).find((k) => k.endsWith('EventAttributes') && (e as Record<string, unknown>)[k]) ?? '?';
      const sig = e.workflowExecutionSignaledEventAttributes;
      const extra = sig ? ` ${sig.signalName} ${JSON.stringify(decode(sig.input)[0]).slice(0, 120)}` : '';
      return `${String(e.eventId)} ${type.replace('EventAttributes', '')}${extra}`;
    })
    .join('\n');
}
