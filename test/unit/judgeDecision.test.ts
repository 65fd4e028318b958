import { strict as assert } from 'node:assert';
import type { Decision } from '../../workflows/decisions';
import { judgeDecision } from '../../workflows/decisions';
import { NOT_APPLIED_CANCELLED } from '../../workflows/intake';
import type { LedgerEntry } from '../../workflows/types';
import { ALL_STATES, DECISION_IDS as base, DIGEST, entryIn, intakeOver } from './helpers';

const OTHER = 'sha256:' + 'b'.repeat(64);

describe('decisions: judgeDecision', () => {
  const approve = (argsDigest?: string): Decision => ({
    kind: 'approve',
    payload: { ...base, ...(argsDigest ? { argsDigest } : {}) },
  });
  const reject: Decision = { kind: 'reject', payload: { ...base, reason: 'no' } };
  const recover: Decision = { kind: 'recover', payload: { ...base, decision: 'retry' } };
  const awaiting = entryIn('awaiting_approval', { argsDigest: DIGEST });
  const rejected = entryIn('rejected', { rejectedBy: 'bob' });
  const approved = entryIn('running', { approvedBy: 'carol' });
  const approvedLater = entryIn('succeeded', { approvedBy: 'carol' });
  const auto = entryIn('running', { approvedBy: 'auto', approver: { kind: 'auto', why: 'policy' } });
  // A person whose name is a sentinel's (issue #27 hole 4): judged by kind, a person's approval.
  const personNamedAuto = entryIn('running', { approvedBy: 'auto', approver: { kind: 'person', name: 'auto' } });
  // Recorded before `approver` existed: the kind is read from the events, never from the name.
  const oldAuto = entryIn('running', { approvedBy: 'auto', events: [{ at: 't0', type: 'auto_approved' }] });
  const oldPersonNamedAuto = entryIn('running', {
    approvedBy: 'auto',
    events: [
      { at: 't0', type: 'awaiting_approval' },
      { at: 't1', type: 'approved', by: 'auto' },
    ],
  });
  const invalid = entryIn('invalid', { error: 'unknown tool' });
  const recoverFor = (park: number): Decision => ({
    kind: 'recover',
    payload: { ...base, decision: 'succeeded', park },
  });
  const parkedTwice = entryIn('recovery_required', {
    events: [
      { at: 't1', type: 'recovery_required', reason: 'first' },
      { at: 't2', type: 'recovery_decided', decision: 'retry' },
      { at: 't3', type: 'recovery_required', reason: 'second' },
    ],
  });

  const cases: {
    name: string;
    entry: LedgerEntry | undefined;
    decision: Decision;
    pending?: boolean;
    ok: boolean;
    why?: RegExp;
  }[] = [
    {
      name: 'approve unknown call',
      entry: undefined,
      decision: approve(),
      ok: false,
      why: /^unknown tool call 'call_1'/,
    },
    { name: 'reject unknown call', entry: undefined, decision: reject, ok: false, why: /^unknown tool call/ },
    { name: 'recover unknown call', entry: undefined, decision: recover, ok: false, why: /^unknown tool call/ },
    {
      name: 'approve invalid entry',
      entry: invalid,
      decision: approve(),
      ok: false,
      why: /invalid and will not run: unknown tool/,
    },
    { name: 'reject invalid entry', entry: invalid, decision: reject, ok: false, why: /invalid/ },
    { name: 'recover invalid entry', entry: invalid, decision: recover, ok: false, why: /invalid/ },
    { name: 'approve awaiting, no digest', entry: awaiting, decision: approve(), ok: true },
    { name: 'approve awaiting, matching digest', entry: awaiting, decision: approve(DIGEST), ok: true },
    {
      name: 'approve awaiting, mismatching digest',
      entry: awaiting,
      decision: approve(OTHER),
      ok: false,
      why: /argsDigest does not match/,
    },
    {
      name: 'approve after rejected',
      entry: rejected,
      decision: approve(),
      ok: false,
      why: /^conflicting: .*rejected by bob/,
    },
    {
      name: 'approve after approved',
      entry: approved,
      decision: approve(),
      ok: false,
      why: /^duplicate: .*approved by carol/,
    },
    {
      name: 'approve after approved, now succeeded',
      entry: approvedLater,
      decision: approve(),
      ok: false,
      why: /^duplicate:/,
    },
    {
      name: 'approve auto-approved',
      entry: auto,
      decision: approve(),
      ok: false,
      why: /^late: .*needs no approval/,
    },
    { name: 'reject awaiting', entry: awaiting, decision: reject, ok: true },
    {
      name: 'reject after rejected',
      entry: rejected,
      decision: reject,
      ok: false,
      why: /^duplicate: .*rejected by bob/,
    },
    {
      name: 'reject after approved',
      entry: approved,
      decision: reject,
      ok: false,
      why: /^conflicting: .*approved by carol/,
    },
    { name: 'reject auto-approved', entry: auto, decision: reject, ok: false, why: /^late:/ },
    {
      name: 'approve, approved by a person named auto',
      entry: personNamedAuto,
      decision: approve(),
      ok: false,
      why: /^duplicate: .*approved by auto/,
    },
    {
      name: 'reject, approved by a person named auto',
      entry: personNamedAuto,
      decision: reject,
      ok: false,
      why: /^conflicting: .*approved by auto/,
    },
    {
      name: 'approve auto-approved (old entry)',
      entry: oldAuto,
      decision: approve(),
      ok: false,
      why: /^late: .*needs no approval/,
    },
    {
      name: 'approve, approved by a person named auto (old entry)',
      entry: oldPersonNamedAuto,
      decision: approve(),
      ok: false,
      why: /^duplicate:/,
    },
    {
      name: 'recover on recovery_required',
      entry: entryIn('recovery_required', { approvedBy: 'carol' }),
      decision: recover,
      ok: true,
    },
    {
      name: 'recover with recoveryPending',
      entry: entryIn('recovery_required'),
      decision: recover,
      pending: true,
      ok: false,
      why: /^duplicate:/,
    },
    { name: 'recover bound to the current park', entry: parkedTwice, decision: recoverFor(2), ok: true },
    {
      name: 'recover bound to an earlier park',
      entry: parkedTwice,
      decision: recoverFor(1),
      ok: false,
      why: /^stale: decided for park 1, but .* is at park 2/,
    },
    {
      name: 'recover sent before the call parked',
      entry: parkedTwice,
      decision: recoverFor(3),
      ok: false,
      why: /^stale: decided for park 3/,
    },
  ];
  // invalid has its own refusal; recovery_required is where a recover applies.
  for (const state of ALL_STATES.filter((st) => st !== 'invalid' && st !== 'recovery_required')) {
    cases.push({
      name: `recover on ${state}`,
      entry: entryIn(state),
      decision: recover,
      ok: false,
      why: new RegExp(`^late: .*is ${state}, not recovery_required`),
    });
  }

  for (const c of cases) {
    it(`${c.name} → ${c.ok ? 'apply' : 'ignore'}`, () => {
      const verdict = judgeDecision(c.entry, c.decision, c.pending);
      assert.equal(verdict.ok, c.ok, JSON.stringify(verdict));
      if (!verdict.ok && c.why) assert.match(verdict.why, c.why);
    });
  }
});

describe('decisions: the intake once the turn is cancelled', () => {
  const setup = (cancelled: boolean) => {
    const ledger = new Map([['call_1', entryIn('recovery_required')]]);
    const { intake, decisions, recoveries } = intakeOver(ledger, { cancelled: () => cancelled });
    intake.modelPending(false);
    return { ledger, decisions, recoveries, intake };
  };

  it('a decision that arrives after the cancel is audited as not applied and changes nothing', () => {
    const { ledger, decisions, recoveries, intake } = setup(true);
    intake.decide('recover', { toolCallId: 'call_1', by: 'ann', decision: 'retry' });
    assert.deepEqual(
      decisions.map((d) => [d.outcome, d.why]),
      [['ignored', NOT_APPLIED_CANCELLED]],
    );
    assert.equal(recoveries.size, 0);
    assert.equal(ledger.get('call_1')!.events.length, entryIn('recovery_required').events.length);
  });

  it('a retry the cancel overtook is re-audited as not applied, and no longer pending', () => {
    const { decisions, recoveries, intake } = setup(false);
    intake.decide('recover', { toolCallId: 'call_1', by: 'ann', decision: 'retry', skipFence: true });
    assert.equal(decisions[0]!.outcome, 'applied');
    assert.equal(recoveries.get('call_1')?.skipFence, true);
    intake.notApplied('call_1', 'not applied: the turn is cancelled before the retry ran');
    assert.deepEqual(
      [decisions[0]!.outcome, decisions[0]!.why],
      ['ignored', 'not applied: the turn is cancelled before the retry ran'],
    );
    assert.equal(recoveries.size, 0);
  });
});
