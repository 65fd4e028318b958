import { strict as assert } from 'node:assert';
import {
  approvalPrompt,
  argumentLines,
  callChange,
  parseApproval,
  parseRecovery,
  parseTypedDuringTurn,
  recoveryLines,
  sentDuringTurn,
  shortValue,
  statusLine,
  steeredInto,
  turnEnd,
} from '../../cli/chatView';
import type { CallState, LedgerEntry } from '../../workflows/types';
import { formatSession } from '../../cli/format';
import { entryIn } from './helpers';

const at = '2024-01-01T00:00:00.000Z';
const e = (state: CallState, over: Partial<LedgerEntry> = {}): LedgerEntry =>
  entryIn(state, { target: 'bob@example.com', ...over });

describe('chat view: what the REPL prints', () => {
  it('shortens long values and says how much is left; one line per argument', () => {
    assert.equal(shortValue('a'.repeat(205)), `${'a'.repeat(200)}… (5 more characters)`);
    assert.equal(shortValue('two\n  lines'), 'two lines');
    assert.deepEqual(argumentLines({ to: 'bob@example.com', n: 3 }), ['    to: bob@example.com', '    n: 3']);
    assert.equal(argumentLines(Object.fromEntries(Array.from({ length: 14 }, (_, i) => [`k${i}`, i]))).length, 13);
  });

  it('offers "always for this target" only when the call names a target', () => {
    assert.match(
      approvalPrompt(e('awaiting_approval')).at(-1)!,
      /y = approve once · a = always for this session \(send_email\) · t = always for bob@example\.com · n = reject/,
    );
    assert.doesNotMatch(approvalPrompt(e('awaiting_approval', { target: undefined })).at(-1)!, /t = /);
  });

  const approvals: [string, boolean, unknown][] = [
    ['y', true, { kind: 'once' }],
    [' YES ', true, { kind: 'once' }],
    ['a', true, { kind: 'always', scope: 'session' }],
    ['t', true, { kind: 'always', scope: 'target' }],
    ['t', false, undefined],
    ['n', true, { kind: 'reject' }],
    ['', true, undefined],
    ['maybe', true, undefined],
  ];
  for (const [line, target, expected] of approvals) {
    it(`approval answer ${JSON.stringify(line)}${target ? '' : ' (no target)'} → ${JSON.stringify(expected)}`, () =>
      assert.deepEqual(parseApproval(line, { target: target ? 'bob@example.com' : undefined }), expected));
  }
  for (const [line, expected] of [
    ['r', 'retry'],
    ['S', 'succeeded'],
    ['failed', 'failed'],
    ['x', undefined],
  ] as const) {
    it(`recovery answer ${line} → ${expected}`, () => assert.equal(parseRecovery(line), expected));
  }

  it('a recovery shows attempts, the dispatch marker, the last phase and the reconcile answer', () => {
    const lines = recoveryLines(
      e('recovery_required', {
        attempts: 1,
        runs: 1,
        dispatched: true,
        events: [
          { at, type: 'outcome_unknown', reason: 't', lastHeartbeatPhase: 'executing' },
          { at, type: 'reconciled', answer: 'unknown', reason: 'lookup down' },
          { at, type: 'recovery_required', reason: 'reconcile could not tell' },
        ],
      }),
    ).join('\n');
    assert.match(lines, /why: reconcile could not tell/);
    assert.match(lines, /attempts: 1, runs: 1, dispatch marker: yes \(the tool was called\), last phase: executing/);
    assert.match(lines, /reconcile answer: unknown \(lookup down\)/);
    assert.match(lines, /r = retry with the same execution ID · s = it succeeded · f = it failed/);
  });

  const changes: [string, LedgerEntry | undefined, LedgerEntry, string[]][] = [
    ['new, waiting', undefined, e('awaiting_approval'), ['→ send_email → bob@example.com [call_1] waits for approval']],
    [
      'approved by a person',
      e('awaiting_approval'),
      e('running', { approvedBy: 'alice' }),
      ['→ send_email → bob@example.com [call_1] approved by alice'],
    ],
    [
      'seen first done, through a grant',
      undefined,
      e('succeeded', { grantId: 'g-1', approvedBy: 'alice', result: { ok: 1 } }),
      [
        '→ send_email → bob@example.com [call_1] approved by grant g-1',
        '✓ send_email → bob@example.com [call_1] succeeded: {"ok":1}',
      ],
    ],
    [
      'a read',
      undefined,
      e('running', { approvedBy: 'auto', approver: { kind: 'auto', why: 'policy' } }),
      ['→ send_email → bob@example.com [call_1] needs no approval'],
    ],
    [
      'approved by a person named auto (issue #27 hole 4): the kind, not the name',
      undefined,
      e('running', { approvedBy: 'auto', approver: { kind: 'person', name: 'auto' } }),
      ['→ send_email → bob@example.com [call_1] approved by auto'],
    ],
    ['no change', e('running'), e('running'), []],
    ['dispatched', e('running'), e('dispatched'), []],
    [
      'failed',
      e('dispatched'),
      e('failed', { error: 'boom' }),
      ['✗ send_email → bob@example.com [call_1] failed: boom'],
    ],
    ['parked: asked separately', e('dispatched'), e('recovery_required'), []],
  ];
  for (const [name, before, now, expected] of changes)
    it(`change: ${name}`, () => assert.deepEqual(callChange(before, now), expected));

  it('status line and turn end', () => {
    assert.equal(statusLine({ state: 'running', iteration: 2, ledger: [] }), 'thinking (model call 2)…');
    assert.equal(statusLine({ state: 'running', iteration: 1, ledger: [e('dispatched')] }), 'running send_email…');
    assert.deepEqual(turnEnd({ state: 'completed', text: 'hi', turn: 1 }), ['assistant: hi']);
    assert.deepEqual(turnEnd({ state: 'failed', error: 'model down', turn: 2 }), ['turn 2 failed: model down']);
  });
});

describe('chat view: lines typed while a turn runs', () => {
  const cases: [string, { text: string; queue: boolean } | undefined][] = [
    ['use the other address', { text: 'use the other address', queue: false }],
    ['  /queue then email carol  ', { text: 'then email carol', queue: true }],
    ['/queue', undefined],
    ['   ', undefined],
    ['/queued is a word', { text: '/queued is a word', queue: false }],
  ];
  for (const [line, want] of cases) it(JSON.stringify(line), () => assert.deepEqual(parseTypedDuringTurn(line), want));

  it('says where the message went', () => {
    assert.match(sentDuringTurn(3, false), /^\(given to turn 3: its next model call reads it/);
    assert.match(sentDuringTurn(undefined, false), /given to the running turn/);
    assert.equal(sentDuringTurn(3, true), '(queued: it runs as its own turn after turn 3)');
    assert.equal(steeredInto(2, 'cc carol'), '(turn 2 took your message "cc carol"; it starts no turn of its own)');
  });
});

describe('show: where messages sent during a turn went', () => {
  it('marks a queued message given to the running turn, and a turn that took messages', () => {
    const text = formatSession({
      sessionId: 's1',
      turns: [
        { n: 1, workflowId: 'session-s1-turn-1', state: 'completed', steered: ['m2'] },
        { n: 2, workflowId: 'session-s1-turn-2', state: 'running' },
      ],
      executions: [],
      transcript: [],
      pending: [
        { text: 'cc carol', messageId: 'm4', steering: 2 },
        { text: 'then lunch', messageId: 'm5' },
      ],
    });
    assert.match(text, /queued: cc carol \(given to turn 2\) \| then lunch\n/);
    assert.match(text, /1 {2}completed {2}session-s1-turn-1 {2}\(took 1 message\(s\) sent while it ran\)/);
  });
});
