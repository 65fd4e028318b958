import { strict as assert } from 'node:assert';
import { Worker } from '@temporalio/worker';
import { faultSinks } from '../../activities/faults';
import { approve, reject } from '../../client/decisions';
import { sessionStatus, turnStatus, waitForTurn } from '../../client/session';
import { workflowSource } from '../../worker/worker';
import {
  approveSignal,
  messageSignal,
  recoverSignal,
  sessionWorkflowId,
  turnWorkflowId,
} from '../../workflows/definitions';
import { argsDigest } from '../../workflows/identity';
import { unpairedToolCalls } from '../../workflows/transcript';
import type { LedgerEntry, TurnInput } from '../../workflows/types';
import { eventually, scripted, uniq } from '../support/scenario';
import type { ScenarioName } from './cells';
import { partitionRetry } from './partition';
import type { CellContext, CellReport } from './runner';

/**
 * Rows that are not "a fault in the standard flow": F12 (reset, continue-as-new, a workflow-level
 * retry), F13 (a new build picks up an in-flight turn) and the human side (decisions against the
 * waiting / executing / recovery_required states). Each ends with the same three-oracle check.
 */

type Scenario = (ctx: CellContext) => Promise<CellReport>;

const entryOf = async (
  ctx: CellContext,
  workflowId: string,
  toolCallId: string,
): Promise<LedgerEntry & { closed: boolean }> => {
  const s = await turnStatus(ctx.c(), workflowId);
  return { ...s.ledger.find((e) => e.toolCallId === toolCallId)!, closed: s.closed };
};
const until = (
  ctx: CellContext,
  workflowId: string,
  toolCallId: string,
  pred: (e: LedgerEntry & { closed: boolean }) => boolean,
  what: string,
) =>
  eventually(
    async () => {
      const e = await entryOf(ctx, workflowId, toolCallId).catch(() => undefined);
      return e?.toolCallId && pred(e) ? e : undefined;
    },
    `${ctx.cell.id}: ${what}`,
    60_000,
  );

type Parked = Awaited<ReturnType<CellContext['startParked']>>;
/** Approves c1 as the approver saw it (its digest). */
const approveC1 = (ctx: CellContext, t: Parked, workerUp = true) =>
  ctx.approve({ ...t, toolCallId: 'c1', argsDigest: t.entry.argsDigest, workerUp });
/** A call whose committed response is lost parks in recovery_required (F4, manual). */
async function parkOnLostResponse(ctx: CellContext): Promise<Parked> {
  await ctx.worker();
  const t = await ctx.startParked();
  await ctx.peer.arm('commit-then-drop', t.entry.executionId, ctx.args);
  await approveC1(ctx, t);
  await until(ctx, t.workflowId, 'c1', (e) => e.state === 'recovery_required', 'the call parks');
  return t;
}

/** F12: reset to the first workflow task after the effect; the approval is re-applied by the reset. */
const reset: Scenario = async (ctx) => {
  await ctx.worker();
  const t = await ctx.startParked();
  await approveC1(ctx, t);
  await until(ctx, t.workflowId, 'c1', (e) => e.closed, 'the first run completes');
  assert.equal((await ctx.peer.observe(t.entry.executionId)).effects.length, 1, 'the first run made its effect');
  const handle = ctx.c().client.workflow.getHandle(t.workflowId);
  const history = await handle.fetchHistory();
  const firstTask = history.events!.find((e) => e.workflowTaskCompletedEventAttributes)!;
  await ctx.c().client.workflowService.resetWorkflowExecution({
    namespace: 'default',
    workflowExecution: { workflowId: t.workflowId, runId: (await handle.describe()).runId },
    reason: 'matrix F12: reset after the effect',
    workflowTaskFinishEventId: firstTask.eventId,
    requestId: uniq('reset'),
  });
  await ctx.settle({ ...t, toolCallId: 'c1' }, ctx.cell.expect);
  return ctx.finish({
    workflowId: t.workflowId,
    executionId: t.entry.executionId,
    extraChecks: ['reset: the reset run kept the execution ID'],
  });
};

/** F12: the session continues as new after each turn; keys never repeat and a re-sent message makes no turn. */
const continueAsNew: Scenario = async (ctx) => {
  const { args, peer } = ctx;
  const call = { id: 'c1', name: peer.tool, arguments: args };
  await ctx.worker({
    model: scripted([
      { toolCalls: [call] },
      { text: 'done' },
      { toolCalls: [call] },
      { text: 'done 2' },
      { text: 'done 3' },
    ]),
  });
  const sessionId = uniq('mx-can');
  const send = (messageId: string) =>
    ctx.c().client.workflow.signalWithStart('session', {
      workflowId: sessionWorkflowId(sessionId),
      taskQueue: ctx.taskQueue,
      args: [{ sessionId, turnsPerRun: 1 }],
      signal: messageSignal,
      signalArgs: [{ text: `message ${messageId}`, messageId }],
    });
  await send('m-1');
  const t1 = await waitForTurn(ctx.c(), { sessionId, messageId: 'm-1', timeoutMs: 30_000 });
  const e1 = t1.ledger[0]!;
  await ctx.approve({ sessionId, toolCallId: 'c1', argsDigest: e1.argsDigest, workerUp: true });
  await ctx.settle({ sessionId, workflowId: t1.workflowId, toolCallId: 'c1' }, ctx.cell.expect);
  await until(ctx, t1.workflowId, 'c1', (e) => e.closed, 'turn 1 completes');
  await send('m-2'); // the session continues as new before turn 2
  const t2 = await waitForTurn(ctx.c(), { sessionId, messageId: 'm-2', timeoutMs: 30_000 });
  const e2 = t2.ledger[0]!;
  assert.notEqual(e2.executionId, e1.executionId, 'a later turn never reuses a key, whatever ids the model repeats');
  await send('m-1'); // a client re-sends the first message after continue-as-new
  await reject(ctx.c(), { sessionId, toolCallId: e2.toolCallId, by: 'alice' });
  await send('m-3');
  await waitForTurn(ctx.c(), { sessionId, messageId: 'm-3', timeoutMs: 30_000 });
  const s = await sessionStatus(ctx.c(), sessionId);
  assert.deepEqual(
    s.turns.map((t) => t.messageId),
    ['m-1', 'm-2', 'm-3'],
    'the re-sent message made no turn',
  );
  const first = (await ctx.c().client.workflow.getHandle(sessionWorkflowId(sessionId)).describe()).runId;
  const history = await ctx.c().client.workflow.getHandle(sessionWorkflowId(sessionId), first).fetchHistory();
  assert.ok(
    history.events!.some((e) => e.workflowExecutionStartedEventAttributes?.continuedExecutionRunId),
    'the session did continue as new',
  );
  assert.equal((await peer.observe(e2.executionId)).effects.length, 0, 'the rejected call of turn 2 made no effect');
  return ctx.finish({
    workflowId: t1.workflowId,
    executionId: e1.executionId,
    extraChecks: ['continue-as-new: keys distinct across runs, re-sent message deduplicated'],
  });
};

/** F12: a turn started with a retry policy (never by us) times out after the effect and is retried. */
const workflowRetry: Scenario = async (ctx) => {
  const { args, peer } = ctx;
  const other = { ...args, amount: Number(args.amount) + 1 };
  await ctx.worker({
    model: scripted([
      { toolCalls: [{ id: 'c1', name: peer.tool, arguments: args }] },
      { toolCalls: [{ id: 'c2', name: peer.tool, arguments: other }] },
      { text: 'done' },
    ]),
  });
  const sessionId = uniq('mx-retry');
  const workflowId = turnWorkflowId(sessionId, 1);
  const input: TurnInput = { sessionId, turn: 1, history: [], message: 'pay twice' };
  await ctx.c().client.workflow.start('agentTurn', {
    workflowId,
    taskQueue: ctx.taskQueue,
    args: [input],
    retry: { maximumAttempts: 2, initialInterval: '1s' },
    workflowRunTimeout: '15s',
  });
  const digest = argsDigest(args);
  const target = { sessionId, turn: 1, toolCallId: 'c1', argsDigest: digest, workerUp: true };
  await until(ctx, workflowId, 'c1', (e) => e.state === 'awaiting_approval', 'c1 waits for approval');
  const firstRun = (await ctx.c().client.workflow.getHandle(workflowId).describe()).runId;
  await ctx.approve(target);
  await until(ctx, workflowId, 'c2', (e) => e.state === 'awaiting_approval', 'c1 ran, c2 waits');
  const ran = await entryOf(ctx, workflowId, 'c1');
  assert.equal(ran.state, 'succeeded');
  assert.equal((await peer.observe(ran.executionId)).effects.length, 1, 'the first run made its effect');
  // c2 is never approved in the first run: the run times out and the retry policy starts attempt 2.
  await eventually(
    async () => (await ctx.c().client.workflow.getHandle(workflowId).describe()).runId !== firstRun,
    'the turn is retried',
    60_000,
  );
  await until(ctx, workflowId, 'c1', (e) => e.state === 'awaiting_approval', 'attempt 2 asks again');
  await ctx.approve(target);
  await ctx.settle({ sessionId, workflowId, toolCallId: 'c1', turn: 1 }, ctx.cell.expect);
  await until(ctx, workflowId, 'c2', (e) => e.state === 'awaiting_approval', 'c2 waits in attempt 2');
  await reject(ctx.c(), { sessionId, turn: 1, toolCallId: 'c2', by: 'alice' });
  const e1 = await entryOf(ctx, workflowId, 'c1');
  return ctx.finish({
    workflowId,
    executionId: e1.executionId,
    extraChecks: ['workflow retry: the retried run did not send again on its own'],
  });
};

/** F13: between approval and execution the worker is replaced by a fresh build, which replays the in-flight turn. */
const newBuild: Scenario = async (ctx) => {
  const w1 = await ctx.worker();
  const t = await ctx.startParked();
  await ctx.kill(w1);
  await approveC1(ctx, t, false);
  const history = await ctx.c().client.workflow.getHandle(t.workflowId).fetchHistory();
  await Worker.runReplayHistory(
    { ...workflowSource(), sinks: faultSinks(), replayName: ctx.cell.id },
    history,
    t.workflowId,
  );
  await ctx.worker();
  await ctx.settle({ ...t, toolCallId: 'c1' }, ctx.cell.expect);
  return ctx.finish({
    workflowId: t.workflowId,
    executionId: t.entry.executionId,
    extraChecks: ['new build: the in-flight history replays on this build'],
  });
};

/** Human side, waiting: two approvals at once. */
const duplicateApprove: Scenario = async (ctx) => {
  await ctx.worker();
  const t = await ctx.startParked();
  const both = await Promise.all(
    ['alice', 'alice'].map((by) =>
      approve(ctx.c(), { sessionId: t.sessionId, toolCallId: 'c1', by, argsDigest: t.entry.argsDigest }),
    ),
  );
  assert.deepEqual(both.map((d) => d.outcome).sort(), ['applied', 'ignored'], JSON.stringify(both));
  assert.match(both.find((d) => d.outcome === 'ignored')!.why!, /^duplicate:/);
  await ctx.settle({ ...t, toolCallId: 'c1' }, ctx.cell.expect);
  return ctx.finish({
    workflowId: t.workflowId,
    executionId: t.entry.executionId,
    extraChecks: ['human: duplicate approval ignored'],
  });
};

/** Human side, waiting: reject, then a late approve. */
const approveAfterReject: Scenario = async (ctx) => {
  await ctx.worker();
  const t = await ctx.startParked();
  assert.equal(
    (await reject(ctx.c(), { sessionId: t.sessionId, toolCallId: 'c1', by: 'bob', reason: 'no' })).outcome,
    'applied',
  );
  const late = await approve(ctx.c(), {
    sessionId: t.sessionId,
    toolCallId: 'c1',
    by: 'alice',
    argsDigest: t.entry.argsDigest,
  }).catch((err: Error) => ({ outcome: 'refused', why: err.message }));
  assert.ok(late.outcome === 'ignored' || late.outcome === 'refused', JSON.stringify(late));
  if (late.outcome === 'ignored') assert.match(late.why!, /^conflicting: .*rejected by bob/);
  await ctx.settle({ ...t, toolCallId: 'c1' }, ctx.cell.expect);
  return ctx.finish({
    workflowId: t.workflowId,
    executionId: t.entry.executionId,
    extraChecks: ['human: approval after rejection ignored'],
  });
};

/** Human side, waiting → executing: approve, then a conflicting reject. */
const rejectAfterApprove: Scenario = async (ctx) => {
  await ctx.worker();
  const t = await ctx.startParked();
  await approveC1(ctx, t);
  const late = await reject(ctx.c(), { sessionId: t.sessionId, toolCallId: 'c1', by: 'bob' }).catch((err: Error) => ({
    outcome: 'refused',
    why: err.message,
  }));
  assert.ok(late.outcome === 'ignored' || late.outcome === 'refused', JSON.stringify(late));
  await ctx.settle({ ...t, toolCallId: 'c1' }, ctx.cell.expect);
  return ctx.finish({
    workflowId: t.workflowId,
    executionId: t.entry.executionId,
    extraChecks: ['human: rejection after approval ignored'],
  });
};

/** Human side, waiting: an approval for arguments other than the ones waiting. */
const staleDigest: Scenario = async (ctx) => {
  await ctx.worker();
  const t = await ctx.startParked();
  const stale = await approve(ctx.c(), {
    sessionId: t.sessionId,
    toolCallId: 'c1',
    by: 'mallory',
    argsDigest: argsDigest({ ...ctx.args, amount: 1 }),
  });
  assert.equal(stale.outcome, 'ignored');
  assert.match(stale.why!, /argsDigest does not match/);
  assert.equal((await entryOf(ctx, t.workflowId, 'c1')).state, 'awaiting_approval');
  await approveC1(ctx, t);
  await ctx.settle({ ...t, toolCallId: 'c1' }, ctx.cell.expect);
  return ctx.finish({
    workflowId: t.workflowId,
    executionId: t.entry.executionId,
    extraChecks: ['human: stale digest ignored, the call kept waiting'],
  });
};

/** Human side, executing: a recovery decision before the call parked is refused; the park waits for a real one. */
const earlyRecover: Scenario = async (ctx) => {
  const w1 = await ctx.worker();
  const t = await ctx.startParked();
  const { executionId } = t.entry;
  await ctx.peer.arm('slow', executionId, ctx.args);
  await approveC1(ctx, t);
  await ctx.peer.barrier('slow', executionId);
  const cli = await ctx.cliRetry(t.sessionId, 'eve');
  assert.equal(cli.code, 2, cli.stderr);
  assert.match(cli.stderr, /call 'c1' is (running|dispatched), not recovery_required/);
  // Now the call does become unknown (its worker dies mid-request), and parks.
  await ctx.kill(w1);
  await ctx.worker();
  await ctx.settle({ ...t, toolCallId: 'c1' }, ctx.cell.expect, () => ctx.peer.release(executionId));
  const s = await turnStatus(ctx.c(), t.workflowId);
  assert.ok(!s.decisions.some((d) => d.by === 'eve'), 'the early decision never reached the turn');
  return ctx.finish({ workflowId: t.workflowId, executionId, extraChecks: ['human: early recover refused'] });
};

/** Human side, recovery_required: two different decisions at once; exactly one applies. */
const conflictingRecovers: Scenario = async (ctx) => {
  const t = await parkOnLostResponse(ctx);
  // Both bound to what the operators saw (this run, this park), then sent together.
  const parked = await entryOf(ctx, t.workflowId, 'c1');
  const handle = ctx.c().client.workflow.getHandle(t.workflowId);
  const bound = { toolCallId: 'c1', executionId: parked.executionId, run: parked.runs, park: 1 };
  await Promise.all(
    (['succeeded', 'failed'] as const).map((decision) =>
      handle.signal(recoverSignal, { ...bound, decision, by: `ops-${decision}`, decisionId: `d-${decision}` }),
    ),
  );
  const e = await until(ctx, t.workflowId, 'c1', (x) => x.closed, 'the turn completes');
  const decided = (await turnStatus(ctx.c(), t.workflowId)).decisions.filter((d) => d.kind === 'recover');
  assert.deepEqual(decided.map((d) => d.outcome).sort(), ['applied', 'ignored'], JSON.stringify(decided));
  const winner = decided.find((d) => d.outcome === 'applied')!;
  assert.match(decided.find((d) => d.outcome === 'ignored')!.why!, /^(duplicate|late):/);
  assert.equal(e.recoveredBy, winner.by);
  // The checker expects the state the winner chose.
  const expect = {
    ...ctx.cell.expect,
    state: e.recoveredBy === 'ops-succeeded' ? ('succeeded' as const) : ('failed' as const),
  };
  return ctx.finish({
    workflowId: t.workflowId,
    executionId: t.entry.executionId,
    extraChecks: ['human: one of two conflicting recoveries applied'],
    expect,
  });
};

/** Human side, recovery_required: the turn is cancelled; the parked call still gets a result. */
const cancelParked: Scenario = async (ctx) => {
  const t = await parkOnLostResponse(ctx);
  await ctx.c().client.workflow.getHandle(t.workflowId).cancel();
  await until(ctx, t.workflowId, 'c1', (e) => e.closed, 'the turn ends');
  const s = await eventually(async () => {
    const st = await sessionStatus(ctx.c(), t.sessionId);
    return st.turns[0]?.state !== 'running' && st;
  }, 'the session records the turn');
  assert.equal(s.turns[0]!.state, 'cancelled', JSON.stringify(s.turns[0]));
  assert.deepEqual(unpairedToolCalls(s.transcript), [], 'the session transcript stays valid');
  const result = s.transcript.find((m) => m.role === 'tool' && m.toolCallId === 'c1');
  assert.match(JSON.stringify(result), /outcome unknown: the turn was cancelled while this call/);
  return ctx.finish({
    workflowId: t.workflowId,
    executionId: t.entry.executionId,
    extraChecks: ['human: a cancelled parked call still has its result'],
  });
};

/** Human side: decisions naming an unknown call, or a call of another session, change nothing. */
const otherSession: Scenario = async (ctx) => {
  await ctx.worker();
  const a = await ctx.startParked();
  const b = await ctx.startParked();
  assert.notEqual(a.entry.executionId, b.entry.executionId);
  await assert.rejects(
    approve(ctx.c(), { sessionId: a.sessionId, toolCallId: 'nope', by: 'alice' }),
    /no tool call 'nope'/,
  );
  const handle = ctx.c().client.workflow.getHandle(a.workflowId);
  await handle.signal(approveSignal, { toolCallId: 'nope', by: 'alice' });
  await handle.signal(approveSignal, {
    toolCallId: 'c1',
    by: 'alice',
    executionId: b.entry.executionId,
    argsDigest: b.entry.argsDigest,
  });
  await eventually(
    async () => (await turnStatus(ctx.c(), a.workflowId)).decisions.length >= 2,
    'both decisions recorded',
  );
  const s = await turnStatus(ctx.c(), a.workflowId);
  assert.equal(s.ledger[0]!.state, 'awaiting_approval');
  assert.ok(
    s.decisions.some((d) => /^unknown tool call 'nope'/.test(d.why ?? '')),
    JSON.stringify(s.decisions),
  );
  assert.ok(
    s.decisions.some((d) => /^stale: decided for execution/.test(d.why ?? '')),
    JSON.stringify(s.decisions),
  );
  await approveC1(ctx, a);
  await ctx.settle({ ...a, toolCallId: 'c1' }, ctx.cell.expect);
  await reject(ctx.c(), { sessionId: b.sessionId, toolCallId: 'c1', by: 'alice' });
  return ctx.finish({
    workflowId: a.workflowId,
    executionId: a.entry.executionId,
    extraChecks: ["human: another session's and unknown calls' decisions ignored"],
  });
};

export const SCENARIOS: Record<ScenarioName, Scenario> = {
  reset,
  'continue-as-new': continueAsNew,
  'workflow-retry': workflowRetry,
  'new-build': newBuild,
  'duplicate-approve': duplicateApprove,
  'approve-after-reject': approveAfterReject,
  'reject-after-approve': rejectAfterApprove,
  'stale-digest': staleDigest,
  'early-recover': earlyRecover,
  'conflicting-recovers': conflictingRecovers,
  'cancel-parked': cancelParked,
  'other-session': otherSession,
  'partition-retry': partitionRetry,
};
