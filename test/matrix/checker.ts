import { isDeepStrictEqual } from 'node:util';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { isProtected } from '../../workflows/policy';
import { argsDigest, canonicalJson } from '../../workflows/identity';
import { activityIdFor, invariantViolations } from '../../workflows/ledger';
import { unpairedToolCalls } from '../../workflows/transcript';
import type { Message, ModelActivityInput, ModelStep, ToolActivityInput, TurnStatus } from '../../workflows/types';
import { assistantMessage } from '../../workflows/context';
import { taskFailuresIn } from '../support/eventCounts';
import type { Expect, Policy } from './cells';
import type { Peer, PeerObservation } from './peers';

/**
 * The checker: after a scenario it reads three oracles that do not share code paths — the external
 * system's own ledger, the turn's ledger and decision audit, and the raw Temporal history — and
 * asserts the invariants a user relies on. It throws on the first violation, naming the oracle.
 */

export interface CheckInput {
  /** Names the scenario in a violation. */
  id: string;
  policy: Policy;
  /** What this cell promises; without it (the randomized tier) only the invariants are checked. */
  expect?: Expect;
  /** The run under check is a workflow-level retry (F12), which the turn must survive. */
  workflowRetry?: boolean;
  executionId: string;
  toolCallId: string;
  args: Record<string, unknown>;
  /** Effects another caller made with the call's key (F10). */
  foreign: number;
  status: TurnStatus & { closed: boolean };
  history: temporal.api.history.v1.IHistory;
  observation: PeerObservation;
  peer: Peer;
}

type Event = temporal.api.history.v1.IHistoryEvent;

export const decode = (payloads: temporal.api.common.v1.IPayloads | null | undefined): unknown[] =>
  (payloads?.payloads ?? []).map((p) => defaultPayloadConverter.fromPayload(p as never));

export class InvariantViolation extends Error {}

export function check(input: CheckInput): string[] {
  const { id, expect, executionId, toolCallId, args, status, observation, peer } = input;
  const workflowRetry = !!input.workflowRetry;
  const passed: string[] = [];
  const must = (cond: unknown, name: string, detail: () => string): void => {
    if (!cond) throw new InvariantViolation(`${id}: ${name}: ${detail()}`);
    passed.push(name);
  };
  const events: Event[] = input.history.events ?? [];
  const protect = isProtected('external', input.policy);

  // Oracle 1: the external system.
  const mine = observation.effects.filter((e) => isDeepStrictEqual(e, peer.effectOf(args)));
  const others = observation.effects.length - mine.length;
  must(
    mine.length <= 1,
    'external: at most one effect per execution ID',
    () => `${mine.length} effects for ${executionId}`,
  );
  if (expect)
    must(
      mine.length === expect.effects,
      'external: the expected effect count',
      () => `expected ${expect.effects}, saw ${mine.length}`,
    );
  must(
    others === input.foreign,
    'external: no effect with other arguments under this key',
    () => `${others} foreign effects, ${input.foreign} seeded: ${JSON.stringify(observation.effects)}`,
  );
  const payload = peer.requestPayload(args);
  if (payload !== null) {
    const drifted = observation.requests.filter((r) => r.payload !== payload).length;
    must(drifted === input.foreign, 'external: every request with the key carried the same payload', () =>
      JSON.stringify(observation.requests),
    );
  }

  // Oracle 2: the turn's ledger and decision audit.
  must(status.closed, 'ledger: the turn closed', () => `state ${status.state}`);
  const entry = status.ledger.find((e) => e.toolCallId === toolCallId);
  must(entry && entry.executionId === executionId, 'ledger: one entry under the execution ID', () =>
    JSON.stringify(status.ledger.map((e) => e.executionId)),
  );
  const e = entry!;
  const violations = invariantViolations(status.ledger);
  must(violations.length === 0, 'ledger: no invariant violated (a bug the fail-safe ledger parked)', () =>
    violations.join('; '),
  );
  const approvals = expect ? (expect.approvals ?? 1) : e.approvedBy ? 1 : 0;
  if (expect) {
    must(
      e.state === expect.state,
      'ledger: the expected final state',
      () => `expected ${expect.state}, got ${e.state} (${e.error ?? ''})`,
    );
    must(e.runs === expect.runs, 'ledger: the expected runs', () => `expected ${expect.runs}, got ${e.runs}`);
    if (expect.attempts !== undefined)
      must(
        e.attempts === expect.attempts,
        'ledger: the expected attempts',
        () => `expected ${expect.attempts}, got ${e.attempts}`,
      );
  } else {
    must(['succeeded', 'failed', 'rejected'].includes(e.state), 'ledger: the call settled', () => e.state);
  }
  must(
    approvals || mine.length === 0,
    'external: no effect without an approval',
    () => `${mine.length} effects, approved by ${e.approvedBy}`,
  );
  must(
    approvals ? e.approvedBy === 'alice' : e.approvedBy === undefined,
    'ledger: approved by the approver, or by no one',
    () => String(e.approvedBy),
  );
  must(
    isDeepStrictEqual(e.arguments, args) && e.argsDigest === argsDigest(args),
    'ledger: arguments and digest are what the model proposed',
    () => canonicalJson(e.arguments),
  );
  const applied = status.decisions.filter((d) => d.outcome === 'applied' && d.toolCallId === toolCallId);
  must(
    applied.filter((d) => d.kind === 'approve').length === approvals,
    'decisions: the expected approvals applied',
    () => JSON.stringify(applied),
  );
  const ids = applied.map((d) => d.decisionId);
  must(new Set(ids).size === ids.length, 'decisions: each decision applied at most once', () => JSON.stringify(ids));
  const parks = e.events.filter((ev) => ev.type === 'recovery_required').length;
  const recovers = applied.filter((d) => d.kind === 'recover').length;
  must(
    (!expect || (parks === (expect.parks?.length ?? 0) && recovers === (expect.human?.length ?? 0))) &&
      recovers <= parks,
    'decisions: the expected parks, at most one recovery decision applied per park',
    () => `${recovers} recovers for ${parks} parks`,
  );

  // Oracle 3: the Temporal history, read raw.
  const taskFailures = taskFailuresIn(events);
  must(taskFailures.length === 0, 'history: no workflow task failed (nothing wedges a turn)', () =>
    taskFailures.join('; '),
  );
  const started = events[0]?.workflowExecutionStartedEventAttributes;
  const rp = started?.retryPolicy;
  if (workflowRetry)
    must(started && (started.attempt ?? 1) > 1, 'history: this is a retried run of the turn', () =>
      String(started?.attempt),
    );
  else
    must(
      started && (!rp || rp.maximumAttempts === 1) && (started.attempt ?? 1) === 1,
      'history: the turn has no workflow-level retry',
      () => JSON.stringify(rp),
    );
  const signals = events.flatMap((ev) => {
    const s = ev.workflowExecutionSignaledEventAttributes;
    return s ? [{ name: s.signalName, payload: decode(s.input)[0] as Record<string, unknown> }] : [];
  });
  const boundApproval = signals.some(
    (s) =>
      s.name === 'approve' &&
      s.payload.toolCallId === toolCallId &&
      s.payload.executionId === executionId &&
      s.payload.argsDigest === argsDigest(args),
  );
  must(
    !approvals || boundApproval,
    'history: an approval bound to the execution ID and the digest of the executed arguments',
    () => JSON.stringify(signals),
  );
  const scheduled = new Map<
    number,
    { activityId: string; type: string; input: unknown; maxAttempts?: number | null }
  >();
  for (const ev of events) {
    const a = ev.activityTaskScheduledEventAttributes;
    if (a)
      scheduled.set(Number(ev.eventId), {
        activityId: a.activityId!,
        type: a.activityType!.name!,
        input: decode(a.input)[0],
        maxAttempts: a.retryPolicy?.maximumAttempts,
      });
  }
  const executes = [...scheduled.values()].filter(
    (s) => s.type === 'executeTool' && s.activityId.startsWith(executionId),
  );
  must(approvals || !executes.length, 'history: nothing executed without an approval', () =>
    JSON.stringify(executes.map((s) => s.activityId)),
  );
  must(
    isDeepStrictEqual(
      executes.map((s) => s.activityId),
      Array.from({ length: e.runs }, (_, i) => activityIdFor(executionId, i + 1)),
    ),
    'history: one execute activity per run, IDs derived from the execution ID',
    () => JSON.stringify(executes.map((s) => s.activityId)),
  );
  must(
    executes.every((s) => {
      const i = s.input as ToolActivityInput;
      return i.executionId === executionId && canonicalJson(i.arguments) === canonicalJson(args);
    }),
    'history: every run carried the same key and arguments',
    () => JSON.stringify(executes.map((s) => s.input)),
  );
  if (protect) {
    must(
      executes.every((s) => s.maxAttempts === 1),
      'history: no automatic retry of a protected call',
      () => JSON.stringify(executes.map((s) => s.maxAttempts)),
    );
    const retried = events.filter((ev) => {
      const st = ev.activityTaskStartedEventAttributes;
      const s = st && scheduled.get(Number(st.scheduledEventId));
      return s && s.type === 'executeTool' && s.activityId.startsWith(executionId) && (st.attempt ?? 1) > 1;
    });
    must(
      retried.length === 0,
      'history: every protected attempt was the first of its activity',
      () => `${retried.length} retried starts`,
    );
  }
  const models = [...scheduled.values()].filter((s) => s.type === 'callModel');
  const unpaired = transcriptsSeen(events, scheduled).flatMap((seen) => unpairedToolCalls(seen));
  must(
    models.length >= 1 && unpaired.length === 0,
    'history: every tool call had exactly one result before each model call',
    () => unpaired.join('; '),
  );

  // The dispatch marker: each run's activity recorded at most one, and a protected effect had one. The
  // turn learns it from the attempt (a timeout's last heartbeat, a result) and writes it in the ledger.
  const proceeded: string[] = [];
  const byHeartbeat = new Set(executes.filter((x) => (x.input as ToolActivityInput).protect).map((x) => x.activityId));
  for (const ev of e.events)
    if (ev.type === 'dispatched' && byHeartbeat.has(String(ev.activityId))) proceeded.push(String(ev.activityId));
  must(new Set(proceeded).size === proceeded.length, 'history: at most one dispatch per activity', () =>
    JSON.stringify(proceeded),
  );
  if (protect) {
    must(
      proceeded.every((id) => executes.some((s) => s.activityId === id)),
      'history: dispatches only for scheduled runs',
      () => JSON.stringify(proceeded),
    );
    // (A rerun of the turn, F12, made no run of its own: its effect is from the earlier run.)
    must(
      mine.length === 0 || e.runs === 0 || proceeded.length >= 1,
      'history: no protected effect without a recorded dispatch',
      () => JSON.stringify(proceeded),
    );
  }
  return passed;
}

/**
 * What each model call of the turn saw, rebuilt from its history alone: the whole transcript in
 * the input (before transcripts by reference), else the messages appended call after call, each
 * call's answer between them (a base from earlier turns is left out: this turn's calls pair up on their own).
 */
function transcriptsSeen(
  events: temporal.api.history.v1.IHistoryEvent[],
  scheduled: Map<number, { type: string; input: unknown }>,
): Message[][] {
  const seen: Message[] = [];
  const out: Message[][] = [];
  for (const ev of events) {
    const s = scheduled.get(Number(ev.eventId));
    if (s?.type === 'callModel') {
      seen.push(...(s.input as ModelActivityInput).context.append);
      out.push([...seen]);
    }
    const done = ev.activityTaskCompletedEventAttributes;
    if (done && scheduled.get(Number(done.scheduledEventId))?.type === 'callModel') {
      const step = decode(done.result)[0] as ModelStep;
      if (step.context) seen.push(assistantMessage(step.text, step.calls));
    }
  }
  return out;
}
