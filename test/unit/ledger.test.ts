import { strict as assert } from 'node:assert';
import type { LedgerInput } from '../../workflows/ledger';
import {
  LedgerTransitionError,
  TRANSITIONS,
  activityIdFor,
  applyLedger,
  applyLedgerSafely,
  earlierRunMayHaveApplied,
  invariantViolations,
  isTerminal,
  liveTurnState,
  newEntry,
} from '../../workflows/ledger';
import type { CallState } from '../../workflows/types';
import { ALL_STATES, AT, entryIn, planned, spec } from './helpers';

const LATER = '2024-01-01T00:00:05.000Z';

/** One representative input per type. */
const INPUTS: { [K in LedgerInput['type']]: Extract<LedgerInput, { type: K }> } = {
  approved: { type: 'approved', by: 'alice' },
  rejected: { type: 'rejected', by: 'bob', reason: 'no' },
  edited: { type: 'edited', by: 'alice', from: 'sha256:a', to: 'sha256:b', arguments: { to: 'x' } },
  scheduled: { type: 'scheduled', activityId: 'owx-x-2' },
  dispatched: { type: 'dispatched', activityId: 'owx-x', attempt: 3 },
  succeeded: { type: 'succeeded', result: { ok: 1 }, via: 'execute' },
  failed: { type: 'failed', error: 'boom', via: 'execute' },
  outcome_unknown: { type: 'outcome_unknown', reason: 'timeout', lastHeartbeatPhase: 'dispatched' },
  not_started: { type: 'not_started', reason: 'cancelled before the tool was called' },
  reconciling: { type: 'reconciling', activityId: 'owx-x-r' },
  reconciled: { type: 'reconciled', answer: 'unknown', reason: 'nope' },
  recovery_required: { type: 'recovery_required', reason: 'unknown outcome' },
  recovery_decided: { type: 'recovery_decided', decision: 'retry', by: 'carol', reason: 'checked' },
  retry_fenced: { type: 'retry_fenced', until: '2024-01-01T00:02:07.000Z', attempt: 1, by: 'carol' },
  decision_refused: { type: 'decision_refused', kind: 'approve', by: 'mallory', why: 'unsigned' },
  notified: { type: 'notified', park: 'approval', by: 'replica-a', delivered: 1, failed: 0 },
  answered: { type: 'answered', by: 'ann', answer: 'yes', decisionId: 'd-1' },
  unanswered: { type: 'unanswered', reason: 'no answer came within 5 seconds' },
};

describe('ledger: TRANSITIONS table (every input × every state)', () => {
  it('has a rule for every input type', () => {
    assert.deepEqual(Object.keys(TRANSITIONS).sort(), Object.keys(INPUTS).sort());
  });

  for (const type of Object.keys(INPUTS) as LedgerInput['type'][]) {
    const rule = TRANSITIONS[type];
    for (const from of ALL_STATES) {
      const input = INPUTS[type];
      if (rule.from.includes(from)) {
        const expected: CallState = rule.to === 'same' ? from : rule.to;
        it(`${type} from ${from} → ${expected}`, () => {
          const before = entryIn(from, { attempts: 1, runs: 1 });
          const snapshot = JSON.parse(JSON.stringify(before));
          const next = applyLedger(before, input, LATER);
          assert.equal(next.state, expected);
          assert.equal(next.events.length, before.events.length + 1);
          // The event records the input, except a result or edited arguments: those are kept once, on the entry.
          const {
            result: _result,
            arguments: _args,
            ...recorded
          } = input as typeof input & {
            result?: unknown;
            arguments?: unknown;
          };
          assert.deepEqual(next.events[next.events.length - 1], { at: LATER, ...recorded });
          assert.deepEqual(before, snapshot, 'input entry must not be mutated');
        });
      } else {
        it(`${type} from ${from} throws LedgerTransitionError`, () => {
          const before = entryIn(from);
          assert.throws(
            () => applyLedger(before, input, LATER),
            (err: unknown) =>
              err instanceof LedgerTransitionError &&
              err.name === 'LedgerTransitionError' &&
              err.message.includes(`'${type}'`) &&
              err.message.includes(`'${from}'`) &&
              err.message.includes('call_1'),
          );
        });
      }
    }
  }
});

describe('ledger: field effects', () => {
  it('approved sets approvedBy', () => {
    const next = applyLedger(entryIn('awaiting_approval'), { type: 'approved', by: 'alice' }, LATER);
    assert.equal(next.approvedBy, 'alice');
    assert.equal(next.state, 'running');
  });

  const rejectCases: { reason?: string; error: string }[] = [
    { reason: 'too risky', error: 'not executed: rejected by bob: too risky' },
    { error: 'not executed: rejected by bob' },
  ];
  for (const c of rejectCases) {
    it(`rejected sets rejectedBy and error (reason ${c.reason ?? 'absent'})`, () => {
      const next = applyLedger(
        entryIn('awaiting_approval'),
        { type: 'rejected', by: 'bob', ...(c.reason ? { reason: c.reason } : {}) },
        LATER,
      );
      assert.equal(next.rejectedBy, 'bob');
      assert.equal(next.error, c.error);
      assert.match(next.error!, /rejected by/);
    });
  }

  it('scheduled increments runs and resets dispatched', () => {
    const next = applyLedger(
      entryIn('recovery_required', { runs: 2, dispatched: true }),
      { type: 'scheduled', activityId: 'x-3' },
      LATER,
    );
    assert.equal(next.runs, 3);
    assert.equal(next.dispatched, false);
    assert.equal(next.state, 'running');
  });

  const dispatchCases = [
    { attempts: 0, attempt: 1, want: 1 },
    { attempts: 2, attempt: 3, want: 3 },
    { attempts: 4, attempt: 2, want: 4 },
  ];
  for (const c of dispatchCases) {
    it(`dispatched sets dispatched and attempts=max(${c.attempts}, ${c.attempt})`, () => {
      const next = applyLedger(
        entryIn('running', { attempts: c.attempts }),
        { type: 'dispatched', activityId: 'x', attempt: c.attempt },
        LATER,
      );
      assert.equal(next.dispatched, true);
      assert.equal(next.attempts, c.want);
    });
  }

  it('succeeded sets result and clears error', () => {
    const next = applyLedger(
      entryIn('recovery_required', { error: 'old' }),
      { type: 'succeeded', result: 42, via: 'recovery' },
      LATER,
    );
    assert.equal(next.result, 42);
    assert.equal('error' in next, false);
  });

  it('succeeded with attempt raises attempts', () => {
    const next = applyLedger(
      entryIn('dispatched', { attempts: 1 }),
      { type: 'succeeded', result: null, via: 'execute', attempt: 3 },
      LATER,
    );
    assert.equal(next.attempts, 3);
  });

  it('failed sets error', () => {
    assert.equal(
      applyLedger(entryIn('running'), { type: 'failed', error: 'nope', via: 'execute' }, LATER).error,
      'nope',
    );
  });

  it('outcome_unknown with attempt raises attempts, state unchanged', () => {
    const next = applyLedger(
      entryIn('dispatched', { attempts: 1 }),
      { type: 'outcome_unknown', reason: 't', attempt: 2 },
      LATER,
    );
    assert.equal(next.attempts, 2);
    assert.equal(next.state, 'dispatched');
  });

  it('recovery_decided sets recoveryDecision and recoveredBy', () => {
    const next = applyLedger(
      entryIn('recovery_required'),
      { type: 'recovery_decided', decision: 'failed', by: 'carol' },
      LATER,
    );
    assert.equal(next.recoveryDecision, 'failed');
    assert.equal(next.recoveredBy, 'carol');
    assert.equal(next.state, 'recovery_required');
  });
});

describe('ledger: the turn never wedges on a transition', () => {
  it('not_started from dispatched clears the marker and leaves the call running, so the next run may be scheduled', () => {
    const next = applyLedger(
      entryIn('dispatched', { runs: 1, dispatched: true, attempts: 1 }),
      { type: 'not_started', reason: 'cancelled before the tool was called' },
      LATER,
    );
    assert.deepEqual([next.state, next.dispatched, next.attempts], ['running', false, 1]);
    assert.equal(applyLedger(next, { type: 'scheduled', activityId: 'x-2' }, LATER).runs, 2);
  });

  it('recovery_required from recovery_required parks anew (a decided retry the turn could not run)', () => {
    const next = applyLedger(
      entryIn('recovery_required'),
      { type: 'recovery_required', reason: 'the turn was cancelled before the retry decided by carol ran' },
      LATER,
    );
    assert.equal(next.state, 'recovery_required');
  });

  // Every impossible (input, state) pair: never a throw; a live call parks, a finished one stays.
  for (const type of Object.keys(INPUTS) as LedgerInput['type'][]) {
    for (const from of ALL_STATES.filter((st) => !TRANSITIONS[type].from.includes(st))) {
      const parks = !isTerminal(from);
      it(`${type} from ${from} → ${parks ? 'recovery_required' : from}, with an invariant_violated event`, () => {
        const { entry, violation } = applyLedgerSafely(entryIn(from), INPUTS[type], LATER);
        assert.equal(violation, `'${type}' is not allowed in state '${from}'`);
        assert.equal(entry.state, parks ? 'recovery_required' : from);
        const added = entry.events.slice(entryIn(from).events.length);
        assert.deepEqual(added[0], { at: LATER, type: 'invariant_violated', attempted: type, from });
        if (parks) assert.match(String(added[1]?.reason), /ledger invariant violated .* until a person decides/);
        assert.deepEqual(invariantViolations([entry]), [`call_1: '${type}' in state '${from}'`]);
      });
    }
  }

  it('an allowed transition is applied unchanged, with no violation', () => {
    const r = applyLedgerSafely(entryIn('running'), INPUTS.dispatched, LATER);
    assert.deepEqual(r, { entry: applyLedger(entryIn('running'), INPUTS.dispatched, LATER) });
    assert.deepEqual(invariantViolations([r.entry]), []);
  });
});

describe('ledger: newEntry', () => {
  it('invalid call → state invalid with error', () => {
    const e = newEntry(planned({ invalid: 'unknown tool' }), 'owx-1', 2, AT);
    assert.equal(e.state, 'invalid');
    assert.equal(e.error, 'unknown tool');
    assert.equal(e.approvedBy, undefined);
    assert.deepEqual(e.events, [{ at: AT, type: 'invalid', why: 'unknown tool' }]);
  });

  it('explicit invalid argument wins', () => {
    const e = newEntry(planned(), 'owx-1', 1, AT, 'duplicate id');
    assert.equal(e.state, 'invalid');
    assert.equal(e.error, 'duplicate id');
  });

  it('requiresApproval → awaiting_approval', () => {
    const e = newEntry(planned({ target: 'bob@example.com' }), 'owx-1', 3, AT);
    assert.equal(e.state, 'awaiting_approval');
    assert.equal(e.approvedBy, undefined);
    assert.equal(e.target, 'bob@example.com');
    assert.equal(e.iteration, 3);
    assert.equal(e.executionId, 'owx-1');
    assert.deepEqual([e.attempts, e.runs, e.dispatched], [0, 0, false]);
    assert.deepEqual([e.effect, e.recovery], ['external', 'manual']);
    assert.deepEqual(e.events, [{ at: AT, type: 'awaiting_approval' }]);
  });

  it('no approval needed → running, approvedBy auto', () => {
    const e = newEntry(planned({ spec: spec({ effect: 'read', requiresApproval: false }) }), 'owx-1', 1, AT);
    assert.equal(e.state, 'running');
    assert.equal(e.approvedBy, 'auto');
    assert.equal('error' in e, false);
    assert.equal('target' in e, false);
    assert.deepEqual(e.events, [{ at: AT, type: 'auto_approved' }]);
  });
});

describe('ledger: liveTurnState and helpers', () => {
  const cases: { states: CallState[]; want: string }[] = [
    { states: [], want: 'running' },
    { states: ['running', 'succeeded'], want: 'running' },
    { states: ['awaiting_approval', 'running'], want: 'awaiting_approval' },
    { states: ['awaiting_approval', 'recovery_required'], want: 'recovery_required' },
    { states: ['recovery_required', 'running', 'failed'], want: 'recovery_required' },
    { states: ['invalid', 'rejected'], want: 'running' },
  ];
  for (const c of cases) {
    it(`liveTurnState([${c.states.join(', ')}]) = ${c.want}`, () => {
      assert.equal(liveTurnState(c.states.map((s) => entryIn(s))), c.want);
    });
  }

  const ids: [number, string][] = [
    [0, 'owx-a'],
    [1, 'owx-a'],
    [2, 'owx-a-2'],
    [7, 'owx-a-7'],
  ];
  for (const [run, want] of ids)
    it(`activityIdFor(owx-a, ${run}) = ${want}`, () => assert.equal(activityIdFor('owx-a', run), want));

  it('isTerminal matches invalid/rejected/succeeded/failed', () => {
    assert.deepEqual(ALL_STATES.filter(isTerminal), ['invalid', 'rejected', 'succeeded', 'failed']);
  });
});

describe('ledger: earlierRunMayHaveApplied (did a run before the current one reach the tool?)', () => {
  const ev = (type: string) => ({ at: AT, type });
  const manual = { effect: 'external', recovery: 'manual' } as const;
  const idempotent = { effect: 'external', recovery: 'idempotent' } as const;
  const read = { effect: 'read', recovery: 'manual' } as const;
  const cases: [string, string[], typeof manual | typeof idempotent | typeof read, boolean][] = [
    ['the first run, refused', ['approved', 'scheduled'], manual, false],
    [
      'the first run, dispatched (the current run is not "earlier")',
      ['approved', 'scheduled', 'dispatched'],
      manual,
      false,
    ],
    [
      'a retry after a dispatched run',
      ['scheduled', 'dispatched', 'outcome_unknown', 'recovery_required', 'scheduled'],
      manual,
      true,
    ],
    ['a re-run after a run that never dispatched', ['scheduled', 'outcome_unknown', 'scheduled'], manual, false],
    ['a dispatch taken back by not_started', ['scheduled', 'dispatched', 'not_started', 'scheduled'], manual, false],
    ['a dispatched run two runs back', ['scheduled', 'dispatched', 'scheduled', 'scheduled'], manual, true],
    [
      'an idempotent retry: the earlier run records no marker',
      ['scheduled', 'outcome_unknown', 'scheduled'],
      idempotent,
      true,
    ],
    ['an idempotent first run', ['scheduled'], idempotent, false],
    ['a read is never an effect', ['scheduled', 'dispatched', 'scheduled'], read, false],
  ];
  it('a call imported as "may have run" counts as run before, even before its first run here', () => {
    const imported = (disposition: string) => [{ at: AT, type: 'imported', disposition, why: 'x' }];
    assert.equal(earlierRunMayHaveApplied(entryIn('running', { events: imported('recovery_required') }), manual), true);
    assert.equal(earlierRunMayHaveApplied(entryIn('running', { events: imported('run') }), manual), false);
  });
  for (const [name, types, spec, want] of cases)
    it(`${name} → ${want}`, () =>
      assert.equal(earlierRunMayHaveApplied(entryIn('running', { events: types.map(ev) }), spec), want));
});
