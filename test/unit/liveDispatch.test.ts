import { strict as assert } from 'node:assert';
import { withHeartbeatMarkers } from '../../client/liveDispatch';
import type { PendingBeat } from '../../client/liveDispatch';
import { renderDetails } from '../../workflows/details';
import type { LedgerEntry } from '../../workflows/types';
import { entryIn } from './helpers';

const ID = 'owx-0123456789abcdef0123456789abcdef';
const marker = { attempt: 1, phase: 'dispatched', dispatched: true };
const beat = (activityId: string, heartbeat: unknown): PendingBeat => ({
  activityId,
  heartbeat,
  at: '2026-12-06T10:00:00.000Z',
});

describe('liveDispatch: withHeartbeatMarkers', () => {
  const running = entryIn('running', { runs: 1 });
  const rows: { name: string; entry: LedgerEntry; pending: PendingBeat[]; dispatched: boolean }[] = [
    { name: 'marker on the current attempt', entry: running, pending: [beat(ID, marker)], dispatched: true },
    {
      name: 'marker on the second run',
      entry: entryIn('running', { runs: 2 }),
      pending: [beat(`${ID}-2`, marker)],
      dispatched: true,
    },
    { name: 'no pending activity', entry: running, pending: [], dispatched: false },
    {
      name: 'heartbeat before the marker',
      entry: running,
      pending: [beat(ID, { attempt: 1, phase: 'starting' })],
      dispatched: false,
    },
    { name: 'undecodable heartbeat', entry: running, pending: [beat(ID, undefined)], dispatched: false },
    {
      name: "another run's activity",
      entry: entryIn('running', { runs: 2 }),
      pending: [beat(ID, marker)],
      dispatched: false,
    },
    {
      name: 'not scheduled yet',
      entry: entryIn('running', { runs: 0 }),
      pending: [beat(ID, marker)],
      dispatched: false,
    },
    {
      name: 'a parked call keeps its state',
      entry: entryIn('recovery_required', { runs: 1 }),
      pending: [beat(ID, marker)],
      dispatched: false,
    },
  ];
  for (const r of rows) {
    it(r.name, () => {
      const [out] = withHeartbeatMarkers([r.entry], r.pending);
      if (!r.dispatched) return assert.deepEqual(out, r.entry);
      assert.equal(out!.state, 'dispatched');
      assert.equal(out!.dispatched, true);
      assert.equal(out!.attempts, 1);
      assert.deepEqual(out!.events.at(-1), {
        at: '2026-12-06T10:00:00.000Z',
        type: 'dispatched',
        activityId: r.pending[0]!.activityId,
        attempt: 1,
        source: 'heartbeat',
      });
    });
  }

  it('an entry already dispatched by the turn is left as it is', () => {
    const e = entryIn('dispatched', { runs: 1, dispatched: true, attempts: 1 });
    assert.equal(withHeartbeatMarkers([e], [beat(ID, marker)])[0], e);
  });
});

describe('details: a running protected call points to its heartbeat', () => {
  const status = (e: LedgerEntry) => ({
    sessionId: 's',
    turn: 1,
    state: 'running' as const,
    iteration: 1,
    ledger: [e],
    decisions: [],
  });
  it('says where the marker is while a protected call runs', () => {
    assert.match(renderDetails(status(entryIn('running', { runs: 1 }))), /"dispatched": true/);
  });
  it('says nothing for a read, an idempotent call or a call not yet scheduled', () => {
    for (const e of [
      entryIn('running', { runs: 1, effect: 'read' }),
      entryIn('running', { runs: 1, recovery: 'idempotent' }),
      entryIn('running', { runs: 0 }),
    ])
      assert.doesNotMatch(renderDetails(status(e)), /heartbeat/);
  });
});
