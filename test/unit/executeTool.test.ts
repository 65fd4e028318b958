import { strict as assert } from 'node:assert';
import type { Client } from '@temporalio/client';
import { ActivityCancelledError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { z } from 'zod';
import { createActivities } from '../../activities';
import { scriptedModel } from '../../activities/models/scripted';
import { createRegistry } from '../../activities/registry';
import { defineTool } from '../../activities/tool';
import { FAILURE } from '../../workflows/definitions';
import type { ToolActivityInput } from '../../workflows/types';
import { quietLogger } from '../support/quietLogger';

// The execute activity's own guards, run in the SDK's mock activity context (no server): what it
// refuses before the tool is called, and which failures Temporal may retry.

describe('executeTool: guards before and after the tool', () => {
  let calls = 0;
  let fail: Error | undefined;
  const charge = defineTool({
    name: 'charge',
    description: 'charges a card',
    input: z.object({ cents: z.number() }),
    requiresApproval: false,
    execute: async () => {
      calls++;
      if (fail) throw fail;
      return { ok: true };
    },
  });
  const lookup = defineTool({
    name: 'lookup',
    description: 'reads',
    input: z.object({}),
    effect: 'read',
    execute: () => 1,
  });
  const { executeTool } = createActivities({
    registry: createRegistry([charge, lookup]),
    model: scriptedModel({ steps: [] }),
  });
  const input = (tool: string, protect: boolean): ToolActivityInput => ({
    sessionId: 's',
    turn: 1,
    toolCallId: 'c1',
    executionId: 'owx-1',
    tool,
    arguments: tool === 'charge' ? { cents: 5 } : {},
    attemptBase: 0,
    protect,
  });
  const rejectsWith = async (p: Promise<unknown>, type: string, message: RegExp) =>
    assert.rejects(p, (err: unknown) => {
      assert.ok(err instanceof ApplicationFailure, String(err));
      assert.equal(err.type, type);
      assert.match(err.message, message);
      return true;
    });
  beforeEach(() => {
    calls = 0;
    fail = undefined;
  });

  /** The server's answers to the awaited heartbeat (the dispatch marker), and what was sent. */
  const sent: unknown[] = [];
  let answer: Error | undefined;
  const client = {
    withAbortSignal: <R>(_signal: AbortSignal, fn: () => R): R => fn(),
    activity: {
      heartbeat: async (_token: Uint8Array, details: unknown) => {
        sent.push(details);
        if (answer) throw answer;
      },
    },
  } as unknown as Client;
  const env = (attempt: number) => new MockActivityEnvironment({ attempt }, { client, logger: quietLogger });
  beforeEach(() => {
    sent.length = 0;
    answer = undefined;
  });

  it('a second attempt of a protected run (a paused or reset activity) is an unknown outcome; nothing is called or sent', async () => {
    await rejectsWith(env(2).run(executeTool, input('charge', true)), FAILURE.unknownFinal, /attempt 2 of one run/);
    assert.equal(calls, 0);
    assert.deepEqual(sent, []);
  });

  it('the marker is recorded before the tool runs; its unexpected error is final, so a pause cannot retry it', async () => {
    fail = new Error('connection reset');
    await rejectsWith(env(1).run(executeTool, input('charge', true)), FAILURE.unknownFinal, /connection reset/);
    assert.equal(calls, 1);
    assert.deepEqual(sent[0], { attempt: 1, phase: 'dispatched', dispatched: true });
  });

  it('a marker refused with a cancel: not started, the tool not called, the marker taken back', async () => {
    answer = new ActivityCancelledError('cancelled');
    await rejectsWith(
      env(1).run(executeTool, input('charge', true)),
      FAILURE.notStarted,
      /the turn is being cancelled/,
    );
    assert.equal(calls, 0);
    assert.deepEqual(sent, [
      { attempt: 1, phase: 'dispatched', dispatched: true },
      { attempt: 1, phase: 'starting' },
    ]);
  });

  it('an unprotected tool’s unexpected error stays retryable (idempotent tools retry it)', async () => {
    fail = new Error('connection reset');
    await rejectsWith(env(1).run(executeTool, input('charge', false)), FAILURE.outcomeUnknown, /connection reset/);
    assert.equal(calls, 1);
  });

  it('a second attempt refused before the tool (a new build: tool gone or schema changed) is an unknown outcome, not a failure', async () => {
    await rejectsWith(
      env(2).run(executeTool, input('gone', false)),
      FAILURE.unknownFinal,
      /an earlier attempt may have applied/,
    );
    await rejectsWith(
      env(2).run(executeTool, { ...input('charge', false), arguments: { cents: 'five' } }),
      FAILURE.unknownFinal,
      /attempt 2 was refused before the tool ran \(invalid arguments/,
    );
    await rejectsWith(env(1).run(executeTool, input('gone', false)), FAILURE.notRegistered, /not registered/);
    assert.equal(calls, 0);
  });

  it('a read is retried by Temporal as usual from its second attempt', async () => {
    assert.deepEqual(await env(2).run(executeTool, input('lookup', false)), { result: 1, attempt: 2 });
  });
});

describe('executeTool: the idempotency window on the server’s clock, whatever the worker’s', () => {
  const T = Date.parse('2026-01-01T10:00:00.000Z');
  let calls = 0;
  const pay = defineTool({
    name: 'pay',
    description: 'charges with an idempotency key',
    input: z.object({}),
    requiresApproval: false,
    recovery: 'idempotent',
    idempotencyWindow: '15s',
    execute: async () => ++calls,
  });
  const { executeTool } = createActivities({
    registry: createRegistry([pay]),
    model: scriptedModel({ steps: [] }),
  });
  // A retry (attempt 2) that the server scheduled `after` ms after the first and started `started` ms after.
  const serverWith = (started: number | null) =>
    ({
      withAbortSignal: <R>(_signal: AbortSignal, fn: () => R): R => fn(),
      workflowService: {
        describeWorkflowExecution: async () => {
          if (started === null) throw new Error('unavailable');
          const ms = T + started;
          const lastStartedTime = { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 };
          return { pendingActivities: [{ activityId: 'owx-1', attempt: 2, lastStartedTime }] };
        },
      },
    }) as unknown as Client;
  const retry = (after: number, started: number | null = after) =>
    new MockActivityEnvironment(
      {
        attempt: 2,
        activityId: 'owx-1',
        workflowExecution: { workflowId: 'wf', runId: 'run' },
        scheduledTimestampMs: T,
        currentAttemptScheduledTimestampMs: T + after,
        isLocal: false,
      },
      { client: serverWith(started), logger: quietLogger },
    ).run(executeTool, {
      sessionId: 's',
      turn: 1,
      toolCallId: 'c1',
      executionId: 'owx-1',
      tool: 'pay',
      arguments: {},
      attemptBase: 0,
      protect: false,
      firstScheduledAt: T,
    });
  const cases: [string, number, number, boolean, (number | null)?][] = [
    ['the issue: 20 s after, the worker 60 s behind', 20_000, -60_000, false],
    ['20 s after, the worker on time', 20_000, 0, false],
    ['5 s after, the worker 5 min ahead', 5_000, 300_000, true],
    ['5 s after, the worker 60 s behind', 5_000, -60_000, true],
    ['scheduled 5 s after, started 20 s after (no worker polled)', 5_000, 0, false, 20_000],
    ['scheduled 5 s after, the server does not say when it started', 5_000, 0, false, null],
  ];
  for (const [name, after, skew, runs, started = after] of cases)
    it(`${name} → ${runs ? 'runs' : 'escalates, not called'}`, async () => {
      calls = 0;
      const real = Date.now;
      // The worker's wall clock relative to the server's; the window must not read it.
      Date.now = () => T + after + skew;
      try {
        if (runs) assert.deepEqual(await retry(after, started), { result: 1, attempt: 2 });
        else
          await assert.rejects(retry(after, started), (err: unknown) => {
            assert.ok(err instanceof ApplicationFailure, String(err));
            assert.equal(err.type, FAILURE.unknownFinal);
            assert.match(
              err.message,
              /not retried: (the first attempt was 20s ago by the Temporal server's clock|the Temporal server did not say when this attempt started \(unavailable\))/,
            );
            return true;
          });
      } finally {
        Date.now = real;
      }
      assert.equal(calls, runs ? 1 : 0);
    });
});
