import { strict as assert } from 'node:assert';
import type { Context } from '@temporalio/activity';
import type { ClockAnchor } from '../../activities/serverClock';
import { activityClock, serverNow, windowPassed } from '../../activities/serverClock';

// One clock for every safety decision (activities/serverClock.ts): an activity's now is a server
// stamp plus local monotonic elapsed time, never its host's wall clock.

const T = Date.parse('2026-01-01T10:00:00.000Z');
const anchor = (serverMs: number, localMs: number, source = 'attempt scheduled'): ClockAnchor => ({
  serverMs,
  localMs,
  source,
});

describe('serverClock: the server now from stamps and monotonic elapsed time', () => {
  const cases: [string, ClockAnchor[], number, number][] = [
    ['right at the stamp', [anchor(T, 100)], 100, T],
    ['plus what the monotonic clock measured', [anchor(T, 100)], 2_600, T + 2_500],
    ['a local instant before the anchor counts as no time', [anchor(T, 100)], 50, T],
    ['the later of two stamps wins', [anchor(T, 100), anchor(T + 60_000, 100, 'attempt started')], 1_100, T + 61_000],
    ['an earlier stamp never pulls it back', [anchor(T + 5_000, 100), anchor(T, 100)], 100, T + 5_000],
  ];
  for (const [name, anchors, local, want] of cases) it(name, () => assert.equal(serverNow(anchors, local), want));
});

describe('serverClock: the idempotency window', () => {
  const cases: [string, { elapsed: number; windowMs: number; marginMs?: number }, RegExp | undefined][] = [
    ['just scheduled', { elapsed: 0, windowMs: 15_000 }, undefined],
    ['well inside', { elapsed: 10_000, windowMs: 15_000 }, undefined],
    ['inside by exactly the margin', { elapsed: 14_000, windowMs: 15_000 }, undefined],
    [
      'within the latency margin of the end',
      { elapsed: 14_500, windowMs: 15_000 },
      /was 15s ago .* 15s the external system keeps idempotency keys/,
    ],
    [
      'past it: the issue’s 20 s retry of a 15 s window',
      { elapsed: 20_000, windowMs: 15_000 },
      /was 20s ago by the Temporal server's clock/,
    ],
    ['no margin asked', { elapsed: 15_000, windowMs: 15_000, marginMs: 0 }, undefined],
    ['a first attempt in the future (replayed input) is inside', { elapsed: -30_000, windowMs: 15_000 }, undefined],
  ];
  for (const [name, c, want] of cases)
    it(`${name} → ${want ? 'passed' : 'inside'}`, () => {
      const why = windowPassed({
        firstMs: T,
        nowMs: T + c.elapsed,
        windowMs: c.windowMs,
        ...(c.marginMs !== undefined ? { marginMs: c.marginMs } : {}),
      });
      if (want) assert.match(why ?? '', want);
      else assert.equal(why, undefined);
    });
});

describe('serverClock: an activity’s clock', () => {
  const ctxWith = (
    info: Partial<Context['info']>,
    describe: () => Promise<unknown> = async () => ({ pendingActivities: [] }),
  ): Context =>
    ({
      info: {
        activityId: 'owx-1',
        attempt: 1,
        isLocal: false,
        namespace: 'default',
        workflowExecution: { workflowId: 'wf', runId: 'run' },
        scheduledTimestampMs: T,
        currentAttemptScheduledTimestampMs: T,
        ...info,
      },
      cancellationSignal: new AbortController().signal,
      client: {
        withAbortSignal: <R>(_s: AbortSignal, fn: () => R): R => fn(),
        workflowService: { describeWorkflowExecution: describe },
      },
    }) as unknown as Context;
  const started =
    (ms: number, attempt = 1, activityId = 'owx-1') =>
    async () => ({
      pendingActivities: [
        { activityId, attempt, lastStartedTime: { seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 } },
      ],
    });
  let local = 0;
  const tick = () => local;
  beforeEach(() => (local = 1_000));

  const cases: [string, Context, number, RegExp | undefined][] = [
    [
      'no answer from the server: the scheduled time, and why the start is unknown',
      ctxWith({}, async () => Promise.reject(new Error('unavailable'))),
      T,
      /unavailable/,
    ],
    [
      'the server started it a minute after scheduling (no worker polled)',
      ctxWith({}, started(T + 60_000)),
      T + 60_000,
      undefined,
    ],
    [
      'a started time of another attempt is not used',
      ctxWith({ attempt: 2 }, started(T + 60_000, 1)),
      T,
      /no started attempt 2 of owx-1/,
    ],
    ['nor of another activity', ctxWith({}, started(T + 60_000, 1, 'owx-2')), T, /no started attempt 1 of owx-1/],
    ['a local activity asks nothing', ctxWith({ isLocal: true }, started(T + 60_000)), T, /local activity/],
  ];
  for (const [name, ctx, want, unknown] of cases)
    it(name, async () => {
      const clock = activityClock(ctx, tick);
      const why = await clock.refine();
      if (unknown) assert.match(why ?? '', unknown);
      else assert.equal(why, undefined);
      local += 2_000;
      assert.equal(clock.now(), want + 2_000);
    });

  it('never reads the host’s wall clock: a worker 60 s behind or 5 min ahead gets the same now', async () => {
    const real = Date.now;
    const nows: number[] = [];
    try {
      for (const skew of [-60_000, 0, 300_000]) {
        Date.now = () => real() + skew;
        local = 1_000;
        const clock = activityClock(ctxWith({}, started(T + 1_500)), tick);
        await clock.refine();
        local = 21_000;
        nows.push(clock.now());
      }
    } finally {
      Date.now = real;
    }
    assert.deepEqual(nows, [T + 21_500, T + 21_500, T + 21_500]);
  });
});
