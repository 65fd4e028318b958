import { strict as assert } from 'node:assert';
import { attemptVerdict, callLink, messageFor, urlDigest } from '../../apps/approvals/notifier';
import type { ToolRegistry } from '../../activities/registry';
import { canPark, withNotify } from '../../activities/registry';
import { notifyActivityId, notifyTaskQueue } from '../../workflows/ids';
import { activityIdFor } from '../../workflows/ledger';
import { newParks, notificationKey, parkKeyOf, parkNotice } from '../../workflows/notifications';
import type { LedgerEntry, PlannedCall, ToolSpec } from '../../workflows/types';
import { entryIn } from './helpers';

// What a parked call owes: one notification per park.

const LATER = '2024-01-01T00:11:00.000Z';
const EARLIER = '2024-01-01T00:09:00.000Z';

const withEvents = (e: LedgerEntry, ...events: Record<string, unknown>[]): LedgerEntry => ({
  ...e,
  events: [...e.events, ...events.map((ev) => ({ at: EARLIER, type: 'x', ...ev }))],
});

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

describe('notifications pushed by the turn: which parks get a notify activity', () => {
  const a = entryIn('awaiting_approval', { toolCallId: 'a', executionId: 'owx-a' });
  const r2 = withEvents(
    entryIn('recovery_required', { toolCallId: 'r', executionId: 'owx-r' }),
    { type: 'recovery_required', reason: 'first' },
    { type: 'recovery_required', reason: 'second' },
  );
  const run = entryIn('running', { toolCallId: 'x', executionId: 'owx-x' });
  const cases: [string, LedgerEntry[], string[], string[], string[]][] = [
    ['nothing watched (no notify): nothing, whatever is parked', [a, r2], [], [], []],
    ['a watched park', [a, run], ['a', 'x'], [], ['owx-a:approval']],
    ['a park already started', [a], ['a'], ['owx-a:approval'], []],
    ['a second recovery park is a new one', [r2], ['r'], ['owx-r:recovery-1'], ['owx-r:recovery-2']],
    ['only watched calls, in ledger order', [r2, a], ['a', 'r'], [], ['owx-r:recovery-2', 'owx-a:approval']],
  ];
  for (const [name, entries, watched, started, want] of cases)
    it(name, () =>
      assert.deepEqual(
        newParks(entries, new Set(watched), new Set(started)).map((p) => notificationKey(p.entry.executionId, p.park)),
        want,
      ),
    );
});

describe("notifications pushed by the turn: a park's notice carries facts, never arguments", () => {
  const turn = { sessionId: 's1', turn: 3 };
  it('approval: since the call was created', () => {
    const n = parkNotice(turn, entryIn('awaiting_approval', { target: 'bob@example.com' }), 'approval');
    assert.deepEqual(n, {
      sessionId: 's1',
      turn: 3,
      toolCallId: 'call_1',
      executionId: 'owx-0123456789abcdef0123456789abcdef',
      tool: 'send_email',
      target: 'bob@example.com',
      state: 'awaiting_approval',
      argsDigest: entryIn('running').argsDigest,
      since: entryIn('running').events[0]!.at,
      park: 'approval',
    });
    assert.ok(!JSON.stringify(n).includes('bob@example.com"}'), 'no arguments object');
  });
  it('recovery: the latest park, its reason and time', () => {
    const e = withEvents(entryIn('recovery_required'), { type: 'recovery_required', reason: 'old' });
    const latest = { ...e, events: [...e.events, { at: LATER, type: 'recovery_required', reason: 'timed out' }] };
    const n = parkNotice(turn, latest, 'recovery-2');
    assert.equal(n.reason, 'timed out');
    assert.equal(n.since, LATER);
  });
  it('a question: its text only', () => {
    const e = entryIn('awaiting_answer', { tool: 'ask_user', arguments: { question: 'Which day?', choices: ['Mon'] } });
    const n = parkNotice(turn, e, 'question');
    assert.equal(n.question, 'Which day?');
    assert.ok(!JSON.stringify(n).includes('Mon'));
  });
});

describe('notifications pushed by the turn: IDs, planning and attempts', () => {
  it('a notify activity ID is its park’s, and no tool activity has it', () => {
    assert.equal(notifyActivityId('owx-1', 'recovery-2'), 'owx-1-notify-recovery-2');
    assert.notEqual(notifyActivityId('owx-1', 'approval'), notifyActivityId('owx-1', 'question'));
    for (const id of [activityIdFor('owx-1', 1), activityIdFor('owx-1', 2), 'owx-1-reconcile-1'])
      assert.ok(!id.includes('-notify-'), id);
    assert.equal(notifyTaskQueue('openworker'), 'openworker-notify');
  });

  const spec = (over: Partial<ToolSpec>): ToolSpec => ({
    name: 't',
    effect: 'read',
    requiresApproval: false,
    recovery: 'manual',
    maxAttempts: 1,
    hasReconcile: false,
    startToCloseMs: 1000,
    heartbeatMs: 1000,
    ...over,
  });
  const planned = (over: Partial<PlannedCall>): PlannedCall => ({
    toolCallId: 'c',
    name: 't',
    arguments: {},
    argsDigest: 'sha256:0',
    ...over,
  });
  const canParkCases: [string, PlannedCall, boolean][] = [
    ['a read', planned({ spec: spec({}) }), false],
    ['a read that needs approval', planned({ spec: spec({ requiresApproval: true }) }), true],
    ['an external effect (it may need recovery)', planned({ spec: spec({ effect: 'external' }) }), true],
    ['a question', planned({ spec: spec({ asks: true }) }), true],
    ['an invalid call', planned({ spec: spec({ effect: 'external' }), invalid: 'bad' }), false],
    ['an unknown tool', planned({}), false],
  ];
  for (const [name, call, want] of canParkCases)
    it(`${name}: ${want ? 'planned with notify' : 'no notify'}`, () => {
      assert.equal(canPark(call), want);
      const registry = { plan: () => [call] } as unknown as ToolRegistry;
      assert.equal(withNotify(registry, true).plan([])[0]!.notify, want ? true : undefined);
      assert.equal(withNotify(registry, false), registry, 'off: the registry as it was');
    });

  const verdicts: [string, Parameters<typeof attemptVerdict>[0], ReturnType<typeof attemptVerdict>][] = [
    ['all delivered', { delivered: 2, failed: 0, attempt: 1, maxAttempts: 20 }, 'complete'],
    ['a URL failed, attempts left', { delivered: 1, failed: 1, attempt: 3, maxAttempts: 20 }, 'retry'],
    ['nothing delivered, attempts left', { delivered: 0, failed: 2, attempt: 19, maxAttempts: 20 }, 'retry'],
    ['the last attempt, some delivered', { delivered: 1, failed: 1, attempt: 20, maxAttempts: 20 }, 'complete'],
    ['the last attempt, nothing delivered', { delivered: 0, failed: 1, attempt: 20, maxAttempts: 20 }, 'give_up'],
  ];
  for (const [name, o, want] of verdicts) it(`${name} → ${want}`, () => assert.equal(attemptVerdict(o), want));

  it('the message has the facts and the link, not the arguments; URLs are named by digest', () => {
    const notice = parkNotice({ sessionId: 's1', turn: 1 }, entryIn('awaiting_approval'), 'approval');
    const link = callLink('https://a.example/', notice);
    assert.equal(link, `https://a.example/#/calls/${notice.executionId}?session=s1&turn=1&call=call_1`);
    const m = messageFor(notice, link) as { text: string; openworker: Record<string, unknown> };
    assert.match(m.text, /^send_email is waiting for approval in session s1 \(turn 1, call call_1\)/);
    assert.equal(m.openworker.park, 'approval');
    assert.ok(!JSON.stringify(m).includes('bob@example.com'));
    assert.match(urlDigest('https://hooks.example/secret'), /^[0-9a-f]{16}$/);
  });
});
