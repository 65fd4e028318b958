import { strict as assert } from 'node:assert';
import type { CallFacts, ExecutionOutcome, NextStep } from '../../workflows/policy';
import {
  afterExecution,
  afterReconcile,
  afterRecoveryDecision,
  afterRetryReconcile,
  attemptsPerRun,
  dispatchLearned,
  isProtected,
  retryStep,
  whenCancelled,
} from '../../workflows/policy';
import type { ReconcileAnswer, RecoveryPolicy, ToolEffect } from '../../workflows/types';

const EFFECTS: ToolEffect[] = ['read', 'external'];
const RECOVERIES: RecoveryPolicy[] = ['manual', 'idempotent', 'reconcile'];
const OUTCOMES: ExecutionOutcome[] = [
  { kind: 'succeeded', result: { id: 7 }, attempt: 1 },
  { kind: 'not_applied', error: 'bad address' },
  { kind: 'not_applied', error: "invalid arguments for 'send_email': replyTo: required", refused: 'invalid_arguments' },
  { kind: 'unknown', reason: 'timed out', attempt: 1, phase: 'dispatched' },
  { kind: 'not_started', reason: 'timed out waiting for the dispatch answer' },
];
/** [runs, maxAttempts]: below the limit and at it. */
const RUN_COUNTS: [number, number][] = [
  [1, 3],
  [3, 3],
];

type Expect = Partial<NextStep> & { kind: NextStep['kind']; match?: RegExp };

/** The oracle, written from the policy's documented rules. */
function expected(f: CallFacts, o: ExecutionOutcome): Expect {
  if (o.kind === 'succeeded') return { kind: 'succeed', result: o.result, via: 'execute' };
  if (o.kind === 'not_applied') {
    // A refusal before the adapter speaks for this attempt only; an earlier dispatched one may have applied.
    if (o.refused && f.earlierDispatch && f.effect === 'external')
      return { kind: 'recovery_required', match: /refused before the tool ran \(invalid arguments.*may have applied/ };
    return { kind: 'fail', error: o.error, via: 'execute' };
  }
  if (f.effect === 'read') return { kind: 'fail', via: 'execute', match: /timed out/ };
  if (f.recovery === 'idempotent') return { kind: 'recovery_required', match: /timed out/ };
  // A proof that the adapter was never called outranks the dispatch marker.
  if (!f.dispatched || o.kind === 'not_started') {
    if (f.runs < f.maxAttempts) return { kind: 'run', match: /never dispatched/ };
    return f.earlierDispatch
      ? { kind: 'recovery_required', match: /could not be started after 3 runs.*earlier attempt was dispatched/ }
      : { kind: 'fail', via: 'not_dispatched', match: /never dispatched.*timed out/ };
  }
  if (f.recovery === 'reconcile') return { kind: 'reconcile' };
  return { kind: 'recovery_required', match: /after dispatch: timed out/ };
}

function check(step: NextStep, want: Expect): void {
  assert.equal(step.kind, want.kind);
  for (const key of ['result', 'via', 'error'] as const) {
    if (key in want)
      assert.deepEqual((step as Record<string, unknown>)[key], (want as Record<string, unknown>)[key], key);
  }
  if (want.match) {
    const text = 'error' in step ? step.error : 'reason' in step ? step.reason : 'why' in step ? step.why : '';
    assert.match(text, want.match);
  }
}

describe('policy: afterExecution (effect × recovery × dispatched × earlier dispatch × runs × outcome)', () => {
  for (const effect of EFFECTS)
    for (const recovery of RECOVERIES)
      for (const dispatched of [false, true])
        for (const earlierDispatch of [false, true])
          for (const [runs, maxAttempts] of RUN_COUNTS)
            for (const outcome of OUTCOMES) {
              const facts: CallFacts = { effect, recovery, dispatched, runs, maxAttempts, earlierDispatch };
              const want = expected(facts, outcome);
              const kind = 'refused' in outcome ? 'refused' : outcome.kind;
              it(`${effect}/${recovery} dispatched=${dispatched} earlier=${earlierDispatch} runs=${runs}/${maxAttempts} ${kind} → ${want.kind}`, () => {
                check(afterExecution(facts, outcome), want);
              });
            }

  // A few spelled-out rows, so the oracle above is not the only source of truth.
  const explicit: { facts: CallFacts; outcome: ExecutionOutcome; want: NextStep }[] = [
    {
      facts: { effect: 'external', recovery: 'manual', dispatched: false, runs: 5, maxAttempts: 5 },
      outcome: { kind: 'unknown', reason: 'worker died' },
      want: {
        kind: 'fail',
        error: 'tool could not be started after 5 attempts (never dispatched): worker died',
        via: 'not_dispatched',
      },
    },
    {
      facts: { effect: 'external', recovery: 'manual', dispatched: false, runs: 4, maxAttempts: 5 },
      outcome: { kind: 'unknown', reason: 'worker died' },
      want: { kind: 'run', why: 'never dispatched (worker died)' },
    },
    {
      facts: { effect: 'external', recovery: 'idempotent', dispatched: true, runs: 1, maxAttempts: 4 },
      outcome: { kind: 'unknown', reason: 'x' },
      want: { kind: 'recovery_required', reason: 'outcome unknown, automatic retries stopped: x' },
    },
    {
      facts: { effect: 'read', recovery: 'manual', dispatched: false, runs: 1, maxAttempts: 3 },
      outcome: { kind: 'unknown', reason: 'x' },
      want: { kind: 'fail', error: 'tool failed: x', via: 'execute' },
    },
    {
      facts: { effect: 'external', recovery: 'manual', dispatched: true, runs: 1, maxAttempts: 5 },
      outcome: { kind: 'unknown', reason: 'x' },
      want: { kind: 'recovery_required', reason: 'outcome unknown after dispatch: x' },
    },
    {
      // Dispatch granted, then the attempt was aborted before it called the adapter (issue: hole 2).
      facts: { effect: 'external', recovery: 'manual', dispatched: true, runs: 1, maxAttempts: 5 },
      outcome: { kind: 'not_started', reason: 'cancelled before the tool was called' },
      want: { kind: 'run', why: 'never dispatched (cancelled before the tool was called)' },
    },
    {
      // Issue #27: a retry on a build whose schema no longer accepts the recorded arguments.
      facts: {
        effect: 'external',
        recovery: 'manual',
        dispatched: false,
        runs: 2,
        maxAttempts: 3,
        earlierDispatch: true,
      },
      outcome: { kind: 'not_applied', error: "invalid arguments for 'send_email': x", refused: 'invalid_arguments' },
      want: {
        kind: 'recovery_required',
        reason:
          "this retry was refused before the tool ran (invalid arguments for 'send_email': x); an earlier attempt was dispatched and may have applied: decide succeeded or failed (a retry needs the tool to accept these arguments again)",
      },
    },
    {
      facts: {
        effect: 'external',
        recovery: 'idempotent',
        dispatched: false,
        runs: 2,
        maxAttempts: 3,
        earlierDispatch: true,
      },
      outcome: { kind: 'not_applied', error: "tool 'x' is not registered", refused: 'not_registered' },
      want: {
        kind: 'recovery_required',
        reason:
          "this retry was refused before the tool ran (tool 'x' is not registered); an earlier attempt was dispatched and may have applied: decide succeeded or failed (a retry needs a worker that has this tool again)",
      },
    },
    {
      // The tool itself said no on this attempt: a definite failure, whatever came before.
      facts: {
        effect: 'external',
        recovery: 'manual',
        dispatched: true,
        runs: 2,
        maxAttempts: 3,
        earlierDispatch: true,
      },
      outcome: { kind: 'not_applied', error: 'card declined' },
      want: { kind: 'fail', error: 'card declined', via: 'execute' },
    },
    {
      // The first run refused: nothing before it, a definite failure as before.
      facts: {
        effect: 'external',
        recovery: 'manual',
        dispatched: false,
        runs: 1,
        maxAttempts: 3,
        earlierDispatch: false,
      },
      outcome: { kind: 'not_applied', error: 'tool x is not registered', refused: 'not_registered' },
      want: { kind: 'fail', error: 'tool x is not registered', via: 'execute' },
    },
  ];
  for (const c of explicit) {
    it(`exact: ${JSON.stringify(c.facts)} → ${JSON.stringify(c.want)}`, () =>
      assert.deepEqual(afterExecution(c.facts, c.outcome), c.want));
  }
});

describe('policy: afterReconcile', () => {
  const base: CallFacts = { effect: 'external', recovery: 'reconcile', dispatched: true, runs: 1, maxAttempts: 3 };
  const cases: { name: string; runs: number; answer: ReconcileAnswer; want: NextStep }[] = [
    {
      name: 'applied',
      runs: 1,
      answer: { status: 'applied', result: 'r' },
      want: { kind: 'succeed', result: 'r', via: 'reconcile' },
    },
    {
      name: 'applied at the limit',
      runs: 3,
      answer: { status: 'applied', result: 0 },
      want: { kind: 'succeed', result: 0, via: 'reconcile' },
    },
    {
      name: 'not_applied, runs left',
      runs: 2,
      answer: { status: 'not_applied' },
      want: { kind: 'run', why: 'reconcile: not applied' },
    },
    {
      name: 'not_applied, no runs left',
      runs: 3,
      answer: { status: 'not_applied' },
      want: { kind: 'recovery_required', reason: 'reconcile said not applied, but 3 runs were used' },
    },
    {
      name: 'unknown with reason',
      runs: 1,
      answer: { status: 'unknown', reason: 'api down' },
      want: { kind: 'recovery_required', reason: 'reconcile could not tell: api down' },
    },
    {
      name: 'unknown without reason',
      runs: 1,
      answer: { status: 'unknown' },
      want: { kind: 'recovery_required', reason: 'reconcile could not tell: unknown' },
    },
  ];
  for (const c of cases)
    it(c.name, () => assert.deepEqual(afterReconcile({ ...base, runs: c.runs }, c.answer), c.want));
});

describe('policy: afterRecoveryDecision', () => {
  const cases: { name: string; input: Parameters<typeof afterRecoveryDecision>[0]; want: NextStep }[] = [
    { name: 'retry', input: { decision: 'retry', by: 'ann' }, want: { kind: 'run', why: 'retry decided by ann' } },
    {
      name: 'succeeded with result',
      input: { decision: 'succeeded', result: { id: 1 }, by: 'ann' },
      want: { kind: 'succeed', result: { id: 1 }, via: 'recovery' },
    },
    {
      name: 'succeeded without result → a note naming who decided',
      input: { decision: 'succeeded', by: 'ann' },
      want: {
        kind: 'succeed',
        result: { status: 'succeeded', note: 'marked succeeded by ann during recovery' },
        via: 'recovery',
      },
    },
    {
      name: 'succeeded with falsy result kept',
      input: { decision: 'succeeded', result: 0, by: 'ann' },
      want: { kind: 'succeed', result: 0, via: 'recovery' },
    },
    {
      name: 'failed with reason',
      input: { decision: 'failed', reason: 'was never sent', by: 'ann' },
      want: { kind: 'fail', error: 'failed (decided by ann): was never sent', via: 'recovery' },
    },
    {
      name: 'failed without reason',
      input: { decision: 'failed', by: 'ann' },
      want: { kind: 'fail', error: 'failed (decided by ann)', via: 'recovery' },
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(afterRecoveryDecision(c.input), c.want));
});

describe("policy: a person's retry asks reconcile() first (retryStep, afterRetryReconcile)", () => {
  const steps: [string, boolean, NextStep][] = [
    ['a tool with reconcile() is asked', true, { kind: 'reconcile', retryDecidedBy: 'ops' }],
    ['a tool without one runs again', false, { kind: 'run', why: 'retry decided by ops' }],
  ];
  for (const [name, has, want] of steps) it(`retryStep: ${name}`, () => assert.deepEqual(retryStep(has, 'ops'), want));

  // Unlike afterReconcile, a person's retry is not bounded by maxAttempts: the person decided it.
  const answers: [string, ReconcileAnswer, NextStep][] = [
    [
      'applied → succeeded with its result, via reconcile (nothing sent again)',
      { status: 'applied', result: { messageId: 'm' } },
      { kind: 'succeed', result: { messageId: 'm' }, via: 'reconcile' },
    ],
    [
      'not applied → runs again',
      { status: 'not_applied' },
      { kind: 'run', why: 'retry decided by ops; reconcile: not applied' },
    ],
    [
      'unknown → parks again, saying the retry did not run and why',
      { status: 'unknown', reason: 'lookup answered 503' },
      {
        kind: 'recovery_required',
        reason:
          'the retry decided by ops did not run: reconcile could not tell whether an earlier attempt was applied (lookup answered 503); decide again',
      },
    ],
    [
      'unknown without a reason',
      { status: 'unknown' },
      {
        kind: 'recovery_required',
        reason:
          'the retry decided by ops did not run: reconcile could not tell whether an earlier attempt was applied (unknown); decide again',
      },
    ],
  ];
  for (const [name, answer, want] of answers)
    it(`afterRetryReconcile: ${name}`, () => assert.deepEqual(afterRetryReconcile(answer, 'ops'), want));
});

describe('policy: isProtected / attemptsPerRun', () => {
  const cases: { effect: ToolEffect; recovery: RecoveryPolicy; protect: boolean }[] = [
    { effect: 'read', recovery: 'manual', protect: false },
    { effect: 'read', recovery: 'idempotent', protect: false },
    { effect: 'read', recovery: 'reconcile', protect: false },
    { effect: 'external', recovery: 'manual', protect: true },
    { effect: 'external', recovery: 'idempotent', protect: false },
    { effect: 'external', recovery: 'reconcile', protect: true },
  ];
  for (const c of cases) {
    it(`${c.effect}/${c.recovery}: protected=${c.protect}, attemptsPerRun=${c.protect ? 1 : 4}`, () => {
      assert.equal(isProtected(c.effect, c.recovery), c.protect);
      assert.equal(attemptsPerRun(c.effect, c.recovery, 4), c.protect ? 1 : 4);
    });
  }
});

describe('policy: whenCancelled (nothing new starts once the turn is being cancelled)', () => {
  const f = (
    effect: ToolEffect,
    recovery: RecoveryPolicy,
    runs: number,
    dispatched: boolean,
    earlierDispatch = false,
  ): CallFacts => ({ effect, recovery, runs, dispatched, maxAttempts: 3, earlierDispatch });
  const parks = { kind: 'recovery_required', reason: 'the turn was cancelled before this call’s outcome was known' };
  const fails = {
    kind: 'fail',
    error: 'interrupted: the turn was cancelled before this call ran',
    via: 'not_dispatched',
  };
  const cases: [string, CallFacts, NextStep, unknown][] = [
    ['approved, never scheduled', f('external', 'manual', 0, false), { kind: 'run', why: 'approved' }, fails],
    [
      'a protected run that never dispatched',
      f('external', 'manual', 1, false),
      { kind: 'run', why: 'never dispatched' },
      fails,
    ],
    ['a dispatched run, to be reconciled', f('external', 'reconcile', 1, true), { kind: 'reconcile' }, parks],
    [
      "a person's retry, to ask reconcile() first",
      f('external', 'manual', 1, true),
      { kind: 'reconcile', retryDecidedBy: 'ops' },
      parks,
    ],
    [
      'a dispatched run, retry decided by a human',
      f('external', 'manual', 1, true),
      { kind: 'run', why: 'retry decided by ops' },
      parks,
    ],
    [
      'an idempotent run that was scheduled',
      f('external', 'idempotent', 1, false),
      { kind: 'run', why: 'retry decided by ops' },
      parks,
    ],
    [
      'a retry that never dispatched after an earlier run that did',
      f('external', 'manual', 2, false, true),
      { kind: 'run', why: 'never dispatched' },
      parks,
    ],
    [
      "a person's retry of a call a reset (or the previous runtime) may have run, before any run here",
      f('external', 'manual', 0, false, true),
      { kind: 'run', why: 'retry decided by ops' },
      parks,
    ],
    ['a read', f('read', 'manual', 1, false), { kind: 'run', why: 'x' }, fails],
    [
      'already parked',
      f('external', 'manual', 1, true),
      { kind: 'recovery_required', reason: 'r' },
      { kind: 'recovery_required', reason: 'r' },
    ],
    [
      'a result in hand',
      f('external', 'manual', 1, true),
      { kind: 'succeed', result: 1, via: 'execute' },
      { kind: 'succeed', result: 1, via: 'execute' },
    ],
    [
      'a failure in hand',
      f('external', 'manual', 1, true),
      { kind: 'fail', error: 'e', via: 'execute' },
      { kind: 'fail', error: 'e', via: 'execute' },
    ],
  ];
  for (const [name, facts, next, expected] of cases)
    it(`${name}: ${next.kind} → ${(expected as NextStep).kind}`, () =>
      assert.deepEqual(whenCancelled(facts, next), expected));
});

describe('policy: dispatchLearned (the heartbeat marker, read from an attempt outcome)', () => {
  const cases: [string, ExecutionOutcome, boolean][] = [
    ['a result', { kind: 'succeeded', result: 1 }, true],
    ['a timeout whose last heartbeat carried the marker', { kind: 'unknown', reason: 't', marked: true }, true],
    ['a timeout whose last heartbeat did not', { kind: 'unknown', reason: 't', marked: false }, false],
    ['an error from the tool (no heartbeat to read)', { kind: 'unknown', reason: 'reset' }, true],
    ['a proof of not starting', { kind: 'not_started', reason: 'cancelled' }, false],
    ['a failure (the call ends: the marker no longer matters)', { kind: 'not_applied', error: 'bad address' }, false],
  ];
  for (const [name, outcome, learned] of cases)
    it(`${name} → ${learned ? 'dispatched' : 'not dispatched'}`, () => assert.equal(dispatchLearned(outcome), learned));
});
