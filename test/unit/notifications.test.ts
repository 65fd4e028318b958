import { strict as assert } from 'node:assert';
import { MAX_CLAIMS_PER_PARK, notificationState, parkKeyOf, refuseClaim } from '../../workflows/notifications';
import type { LedgerEntry } from '../../workflows/types';
import { entryIn } from './helpers';

// What a parked call owes: one notification per park, one claim at a time, a bounded number of claims.

const NOW = Date.parse('2024-01-01T00:10:00.000Z');
const LATER = '2024-01-01T00:11:00.000Z';
const EARLIER = '2024-01-01T00:09:00.000Z';

const withEvents = (e: LedgerEntry, ...events: Record<string, unknown>[]): LedgerEntry => ({
  ...e,
  events: [...e.events, ...events.map((ev) => ({ at: EARLIER, type: 'x', ...ev }))],
});
const claim = (park: string, by: string, until: string) => ({ type: 'notification_claimed', park, by, until });
const sent = (park: string, by: string) => ({ type: 'notified', park, by, delivered: 1, failed: 0 });

describe('notifications: which park a call is at', () => {
  const cases: [string, LedgerEntry, string | undefined][] = [
    ['awaiting approval', entryIn('awaiting_approval'), 'approval'],
    ['running', entryIn('running'), undefined],
    ['succeeded', entryIn('succeeded'), undefined],
    [
      'parked the second time',
      withEvents(entryIn('recovery_required'), { type: 'recovery_required' }, { type: 'recovery_required' }),
      'recovery-2',
    ],
  ];
  for (const [name, e, want] of cases) it(`${name} → ${want ?? 'none'}`, () => assert.equal(parkKeyOf(e), want));
});

describe('notifications: claims', () => {
  const base = { executionId: 'owx-1', park: 'approval', by: 'replica-b', leaseMs: 60_000 };
  const waiting = entryIn('awaiting_approval', { executionId: 'owx-1' });
  const cases: [string, LedgerEntry | undefined, typeof base, RegExp | undefined][] = [
    ['a fresh park', waiting, base, undefined],
    ['an unknown execution', undefined, base, /unknown execution owx-1/],
    ['another park', waiting, { ...base, park: 'recovery-1' }, /not at park 'recovery-1' \(now approval\)/],
    [
      'already sent',
      withEvents(waiting, claim('approval', 'replica-a', EARLIER), sent('approval', 'replica-a')),
      base,
      /notified already/,
    ],
    ['a live claim', withEvents(waiting, claim('approval', 'replica-a', LATER)), base, /claimed by replica-a until/],
    ['an expired claim', withEvents(waiting, claim('approval', 'replica-a', EARLIER)), base, undefined],
    [
      'too many claims without a delivery',
      withEvents(
        waiting,
        ...Array.from({ length: MAX_CLAIMS_PER_PARK }, () => claim('approval', 'replica-a', EARLIER)),
      ),
      base,
      /5 claims for park 'approval' without a delivery; given up/,
    ],
    [
      'a claim of an earlier park does not count',
      withEvents(entryIn('recovery_required', { executionId: 'owx-1' }), claim('approval', 'a', LATER), {
        type: 'recovery_required',
      }),
      { ...base, park: 'recovery-1' },
      undefined,
    ],
  ];
  for (const [name, e, c, refused] of cases)
    it(`${name}: ${refused ? 'refused' : 'granted'}`, () => {
      const why = refuseClaim(e, c, NOW);
      if (refused) assert.match(why ?? '', refused);
      else assert.equal(why, undefined);
    });

  it('the state says what the inbox needs: park, sent, live claim', () => {
    assert.deepEqual(notificationState(withEvents(waiting, claim('approval', 'r', LATER)), NOW), {
      park: 'approval',
      notified: false,
      claims: 1,
      claimedBy: 'r',
      claimedUntil: LATER,
    });
  });
});
