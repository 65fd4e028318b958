import { strict as assert } from 'node:assert';
import { notDecidable } from '../../client/decisions';
import type { DecisionKind, LedgerEntry } from '../../workflows/types';
import { ALL_STATES, entryIn } from './helpers';

// What the client says, before sending anything, about a decision the call's state does not take
// (#28: `approve` of a call that already succeeded said only that no turn runs, or nothing at all).

const WF = 'session-s-turn-1';
const bob = { approver: { kind: 'person', name: 'bob' }, approvedBy: 'bob' } as const;

describe('decisions: notDecidable (one line naming the call state)', () => {
  const cases: { kind: DecisionKind; entry: LedgerEntry; want: RegExp | undefined }[] = [
    { kind: 'approve', entry: entryIn('awaiting_approval'), want: undefined },
    { kind: 'reject', entry: entryIn('awaiting_approval'), want: undefined },
    { kind: 'recover', entry: entryIn('recovery_required'), want: undefined },
    {
      kind: 'approve',
      entry: entryIn('succeeded', bob),
      want: /^call 'call_1' in session-s-turn-1 already succeeded \(approved by bob\): there is nothing to approve$/,
    },
    {
      kind: 'reject',
      entry: entryIn('succeeded', { approver: { kind: 'auto', why: 'grant' }, grantId: 'g-1' }),
      want: /already succeeded \(approved by a standing approval\): there is nothing to reject$/,
    },
    { kind: 'approve', entry: entryIn('running', bob), want: /is already approved by bob and running: there/ },
    { kind: 'approve', entry: entryIn('rejected', { rejectedBy: 'ann' }), want: /was already rejected by ann: / },
    { kind: 'approve', entry: entryIn('failed', bob), want: /already ran and failed \(approved by bob\)/ },
    { kind: 'approve', entry: entryIn('recovery_required', bob), want: /is recovery_required: it takes a recovery/ },
    {
      kind: 'recover',
      entry: entryIn('succeeded', bob),
      want: /^call 'call_1' is succeeded, not recovery_required: a recovery decision answers a parked call/,
    },
  ];
  for (const c of cases)
    it(`${c.kind} on ${c.entry.state}${c.want ? ' is refused' : ' applies'}`, () => {
      const why = notDecidable(c.entry, c.kind, WF);
      if (!c.want) assert.equal(why, undefined);
      else assert.match(why ?? '', c.want);
    });

  it('every state: approve applies only to awaiting_approval, and no message names a CLI flag', () => {
    for (const state of ALL_STATES) {
      const why = notDecidable(entryIn(state), 'approve', WF);
      assert.equal(why === undefined, state === 'awaiting_approval', state);
      assert.ok(!why?.includes('--'), why);
    }
  });
});
