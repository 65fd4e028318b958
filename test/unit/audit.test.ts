import { strict as assert } from 'node:assert';
import { MAX_NOT_APPLIED_KEPT, createDecisionAudit, omittedDecisions } from '../../workflows/audit';
import { renderDetails } from '../../workflows/details';
import type { DecisionRecord } from '../../workflows/types';
import { entryIn, intakeOver } from './helpers';

const ignored = (i: number): DecisionRecord => ({
  at: `t${i}`,
  kind: 'approve',
  toolCallId: `junk-${i}`,
  by: 'flood',
  outcome: 'ignored',
  why: 'unknown',
});
const applied = (i: number): DecisionRecord => ({ ...ignored(i), toolCallId: `call-${i}`, outcome: 'applied' });

describe('audit: a bounded decision audit (a flood of signals costs the turn a constant)', () => {
  const cases: { name: string; max: number; feed: DecisionRecord[]; ids: string[]; omitted: number }[] = [
    {
      name: 'under the limit: everything kept, no count',
      max: 3,
      feed: [1, 2, 3].map(ignored),
      ids: ['junk-1', 'junk-2', 'junk-3'],
      omitted: 0,
    },
    {
      name: 'over the limit: the latest kept, the rest counted once at the front',
      max: 2,
      feed: [1, 2, 3, 4, 5].map(ignored),
      ids: ['(3 omitted)', 'junk-4', 'junk-5'],
      omitted: 3,
    },
    {
      name: 'applied decisions are always kept, in order, and do not count',
      max: 1,
      feed: [applied(1), ignored(2), applied(3), ignored(4), ignored(5)],
      ids: ['(2 omitted)', 'call-1', 'call-3', 'junk-5'],
      omitted: 2,
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const decisions: DecisionRecord[] = [];
      const audit = createDecisionAudit(decisions, c.max);
      for (const r of c.feed) audit.add(r);
      assert.deepEqual(
        decisions.map((d) => d.toolCallId ?? `(${d.omitted} omitted)`),
        c.ids,
      );
      assert.equal(omittedDecisions(decisions), c.omitted);
    });

  it('the count says what was refused and the limit, and starts at the first one not kept', () => {
    const decisions: DecisionRecord[] = [];
    const audit = createDecisionAudit(decisions, 2);
    for (const i of [1, 2, 3, 4]) audit.add(ignored(i));
    assert.deepEqual(decisions[0], {
      at: 't1',
      kind: 'decisions',
      outcome: 'ignored',
      omitted: 2,
      why: '2 more decisions not applied are not kept: more than the limit of 2 per turn (the latest 2 are)',
    });
  });

  it('a turn flooded with 10,000 junk approvals keeps the latest ones and still applies the real one', () => {
    const ledger = new Map([['call_a', entryIn('awaiting_approval', { toolCallId: 'call_a' })]]);
    const { intake, decisions } = intakeOver(ledger);
    intake.modelPending(false);
    for (let i = 0; i < 10_000; i++) intake.decide('approve', { toolCallId: `junk-${i}`, by: 'flood' });
    intake.decide('approve', { toolCallId: 'call_a', by: 'ann' });
    assert.equal(decisions.length, MAX_NOT_APPLIED_KEPT + 2);
    assert.equal(omittedDecisions(decisions), 10_000 - MAX_NOT_APPLIED_KEPT);
    assert.equal(decisions[decisions.length - 2]!.toolCallId, 'junk-9999');
    assert.equal(decisions[decisions.length - 1]!.outcome, 'applied');
    assert.equal(ledger.get('call_a')!.state, 'running');
    const md = renderDetails({ sessionId: 's', turn: 1, state: 'running', iteration: 1, ledger: [], decisions });
    assert.match(md, /…and 9900 earlier ones not kept: a turn keeps the latest 100\./);
  });
});
