import { strict as assert } from 'node:assert';
import { Worker } from '@temporalio/worker';
import { faultSinks } from '../../activities/faults';
import { reject } from '../../client/decisions';
import { sessionStatus, waitForTurn } from '../../client/session';
import { workflowSource } from '../../worker/worker';
import { messageSignal, sessionWorkflowId, turnWorkflowId } from '../../workflows/definitions';
import { argsDigest } from '../../workflows/identity';
import type { TurnInput } from '../../workflows/types';
import { eventually, scripted, uniq } from '../support/scenario';
import type { Scenario } from './scenarioSteps';
import { approveC1, entryOf, until } from './scenarioSteps';

/**
 * F12 and F13: the turn run again (reset, continue-as-new, a workflow-level retry) and a new build
 * that picks up an in-flight turn. Each ends with the same three-oracle check.
 */

export const reset: Scenario = async (ctx) => {
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
export const continueAsNew: Scenario = async (ctx) => {
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
export const workflowRetry: Scenario = async (ctx) => {
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
export const newBuild: Scenario = async (ctx) => {
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
