import { strict as assert } from 'node:assert';
import { approve, reject } from '../../client/decisions';
import { sessionStatus, turnStatus } from '../../client/session';
import { approveSignal, recoverSignal } from '../../workflows/definitions';
import { argsDigest } from '../../workflows/identity';
import { unpairedToolCalls } from '../../workflows/transcript';
import { eventually } from '../support/scenario';
import type { ScenarioName } from './cells';
import { partitionRetry } from './partition';
import type { Scenario } from './scenarioSteps';
import { approveC1, entryOf, parkOnLostResponse, until } from './scenarioSteps';
import { continueAsNew, newBuild, reset, workflowRetry } from './turnRuns';

/**
 * The human side of the matrix: decisions against the waiting / executing / recovery_required
 * states, and the registry of every scenario row (F12 and F13 are in turnRuns.ts). Each ends with the
 * same three-oracle check.
 */

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
  // Both bound to what the operators saw (this run, this park), then sent while no worker runs, so
  // that one workflow task takes both: the case the intake's dedupe is for (with a worker up they may
  // land in two tasks, and the second is refused as late whatever the dedupe does).
  const parked = await entryOf(ctx, t.workflowId, 'c1');
  await ctx.kill(t.worker);
  const handle = ctx.c().client.workflow.getHandle(t.workflowId);
  const bound = { toolCallId: 'c1', executionId: parked.executionId, run: parked.runs, park: 1 };
  for (const decision of ['succeeded', 'failed'] as const)
    await handle.signal(recoverSignal, { ...bound, decision, by: `ops-${decision}`, decisionId: `d-${decision}` });
  await ctx.worker();
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
