import { strict as assert } from 'node:assert';
import {
  ARGS_PREVIEW_CHARS,
  ARGS_PREVIEW_KEYS,
  argsPreview,
  inboxRows,
  memoKey,
  readInboxMemo,
  type InboxRow,
} from '../../workflows/inboxRows';
import type { CallState, DecisionRecord, LedgerEntry } from '../../workflows/types';
import { AT, entryIn } from './helpers';

// The rows a parked turn keeps in its memo (workflows/inboxRows.ts) are a pure function of its ledger
// and decisions: the inbox lists them from visibility and never asks the turn.

const T1 = '2024-01-01T00:01:00.000Z';
const LATER = '2999-01-01T00:00:00.000Z';
const ev = (type: string, extra: Record<string, unknown> = {}, at = T1) => ({ at, type, ...extra });
const ignored = (toolCallId: string, why: string): DecisionRecord => ({
  at: T1,
  kind: 'approve',
  toolCallId,
  by: 'eve',
  outcome: 'ignored',
  why,
});

type Case = {
  name: string;
  entry: LedgerEntry;
  decisions?: DecisionRecord[];
  /** The row's fields to compare (undefined: no row at all). */
  want?: Partial<InboxRow>;
  /** Fields the row must not have. */
  absent?: (keyof InboxRow)[];
};

const UNLISTED: CallState[] = ['invalid', 'rejected', 'running', 'dispatched', 'reconciling', 'succeeded', 'failed'];

const CASES: Case[] = [
  ...UNLISTED.map((state) => ({ name: `${state}: no row`, entry: entryIn(state) })),
  {
    name: 'awaiting approval: the approval park, arguments previewed only',
    entry: entryIn('awaiting_approval', {
      target: 'bob@example.com',
      events: [ev('created'), ev('awaiting_approval')],
    }),
    want: {
      toolCallId: 'call_1',
      tool: 'send_email',
      target: 'bob@example.com',
      state: 'awaiting_approval',
      since: T1,
      argsPreview: { to: 'bob@example.com' },
      attempts: 0,
      notification: { park: 'approval', notified: false },
    },
    absent: ['reason', 'question', 'fence', 'retryNote', 'notApplied'],
  },
  {
    name: 'awaiting an answer: the question, the question park',
    entry: entryIn('awaiting_answer', {
      tool: 'ask_user',
      effect: 'read',
      arguments: { question: 'Which day?', choices: ['Mon', 'Fri'] },
    }),
    want: {
      state: 'awaiting_answer',
      question: { question: 'Which day?', choices: ['Mon', 'Fri'] },
      notification: { park: 'question', notified: false },
    },
    absent: ['reason', 'retryNote'],
  },
  {
    name: 'recovery_required: the reason, the n-th recovery park, the retry note',
    entry: entryIn('recovery_required', {
      attempts: 2,
      hasReconcile: false,
      events: [
        ev('created'),
        ev('recovery_required', { reason: 'first' }),
        ev('recovery_decided'),
        ev('recovery_required', { reason: 'outcome unknown' }),
      ],
    }),
    want: {
      state: 'recovery_required',
      reason: 'outcome unknown',
      attempts: 2,
      notification: { park: 'recovery-2', notified: false },
    },
  },
  {
    name: 'a decided retry waiting out its fence keeps the park reason',
    entry: entryIn('recovery_required', {
      events: [
        ev('recovery_required', { reason: 'lost' }),
        ev('retry_fenced', { until: LATER, attempt: 1, by: 'carol' }),
      ],
    }),
    want: { reason: 'lost', fence: { until: LATER, attempt: 1, by: 'carol' } },
  },
  {
    name: 'a notified park',
    entry: entryIn('awaiting_approval', {
      events: [ev('awaiting_approval'), ev('notified', { park: 'approval', by: 'r2', delivered: 1, failed: 0 })],
    }),
    want: { notification: { park: 'approval', notified: true } },
  },
  {
    name: 'an earlier park notified does not count for this one',
    entry: entryIn('recovery_required', {
      events: [
        ev('recovery_required', { reason: 'a' }),
        ev('notified', { park: 'recovery-1', by: 'r', delivered: 1, failed: 0 }),
        ev('recovery_required', { reason: 'b' }),
      ],
    }),
    want: { notification: { park: 'recovery-2', notified: false } },
  },
  {
    name: "decisions not applied: this call's only",
    entry: entryIn('awaiting_approval'),
    decisions: [ignored('call_1', 'stale digest'), ignored('call_2', 'other call')],
    want: { notApplied: [{ at: T1, kind: 'approve', toolCallId: 'call_1', by: 'eve', why: 'stale digest' }] },
  },
];

describe('inbox rows (the turn memo the inbox lists)', () => {
  for (const c of CASES) {
    it(c.name, () => {
      const rows = inboxRows([c.entry], c.decisions ?? []);
      if (!c.want) return assert.deepEqual(rows, []);
      assert.equal(rows.length, 1);
      const row = rows[0]!;
      for (const [k, v] of Object.entries(c.want)) assert.deepEqual(row[k as keyof InboxRow], v, k);
      for (const k of c.absent ?? []) assert.ok(!(k in row), `no ${k}`);
      assert.ok(!('arguments' in row), 'never the arguments');
    });
  }

  it('one row per parked call, in ledger order, only the parked ones', () => {
    const rows = inboxRows(
      [
        entryIn('succeeded', { toolCallId: 'a' }),
        entryIn('recovery_required', { toolCallId: 'b' }),
        entryIn('awaiting_approval', { toolCallId: 'c' }),
      ],
      [],
    );
    assert.deepEqual(
      rows.map((r) => [r.toolCallId, r.state]),
      [
        ['b', 'recovery_required'],
        ['c', 'awaiting_approval'],
      ],
    );
  });

  const long = 'x'.repeat(5000);
  const PREVIEWS: [string, unknown, Record<string, string>][] = [
    ['strings as they are', { to: 'a@b', n: 3 }, { to: 'a@b', n: '3' }],
    [
      'a long value clipped, its length said',
      { body: long },
      { body: `${'x'.repeat(ARGS_PREVIEW_CHARS)}… (5000 chars)` },
    ],
    ['nested values as JSON', { a: { b: [1] } }, { a: '{"b":[1]}' }],
    ['not an object', 'raw text', { value: 'raw text' }],
    ['an array', [1, 2], { value: '[1,2]' }],
    [
      'more keys than shown: counted',
      Object.fromEntries([...Array(ARGS_PREVIEW_KEYS + 2).keys()].map((i) => [`k${i}`, i])),
      {
        ...Object.fromEntries([...Array(ARGS_PREVIEW_KEYS).keys()].map((i) => [`k${i}`, String(i)])),
        '…': '2 more',
      },
    ],
  ];
  for (const [name, args, want] of PREVIEWS)
    it(`argument preview: ${name}`, () => assert.deepEqual(argsPreview(args), want));

  it('a row stays small whatever the arguments', () => {
    const big = Object.fromEntries([...Array(50).keys()].map((i) => [`k${i}`, long]));
    const [row] = inboxRows([entryIn('awaiting_approval', { arguments: big })], []);
    assert.ok(JSON.stringify(row).length < 2000, `${JSON.stringify(row).length} chars`);
  });

  const MEMOS: [string, unknown, boolean][] = [
    ['absent (a turn of a build before baseline 1)', undefined, false],
    ['another version', { v: 2, sessionId: 's', turn: 1, rows: [] }, false],
    ['no rows', { v: 1, sessionId: 's', turn: 1 }, false],
    ['a memo', { v: 1, sessionId: 's', turn: 1, rows: [] }, true],
  ];
  for (const [name, value, ok] of MEMOS)
    it(`reading a memo: ${name}`, () => assert.equal(readInboxMemo(value) !== undefined, ok));

  // The memo's key: a change of a row's content upserts again; a change of its times alone does not.
  const memo = (rows: unknown[]) => ({ v: 1 as const, sessionId: 's', turn: 1, rows: rows as InboxRow[] });
  const row = { toolCallId: 'c1', state: 'recovery_required', since: AT, attempts: 1 };
  const KEYS: [string, unknown[], unknown[], boolean][] = [
    ['the same rows', [row], [row], true],
    ['only since moved', [row], [{ ...row, since: '2030-01-01T00:00:00.000Z' }], true],
    [
      'only a fence time moved',
      [{ ...row, fence: { until: AT, attempt: 1, by: 'a' } }],
      [{ ...row, fence: { until: 'x', attempt: 1, by: 'a' } }],
      true,
    ],
    [
      'only a not-applied time moved',
      [{ ...row, notApplied: [{ at: AT, kind: 'approve' }] }],
      [{ ...row, notApplied: [{ at: 'y', kind: 'approve' }] }],
      true,
    ],
    ['a fence appeared', [row], [{ ...row, fence: { until: AT, attempt: 1, by: 'a' } }], false],
    ['attempts changed', [row], [{ ...row, attempts: 2 }], false],
    ['a row left', [row, { ...row, toolCallId: 'c2' }], [row], false],
  ];
  for (const [name, a, b, same] of KEYS)
    it(`memo key: ${name} → ${same ? 'no upsert' : 'upsert'}`, () =>
      assert.equal(memoKey(memo(a)) === memoKey(memo(b)), same));
});
