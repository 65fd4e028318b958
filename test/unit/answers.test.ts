import { strict as assert } from 'node:assert';
import { specOf } from '../../activities/registry';
import { askUserTool } from '../../activities/tools/askUser';
import type { Tool } from '../../activities/tool';
import { refusedBy } from '../../workflows/deciders';
import { parseDecision } from '../../workflows/decisions';
import {
  answerDeadlineAt,
  answerDeadlineMs,
  judgeAnswer,
  matchAnswer,
  MAX_ANSWER_TIMEOUT_S,
  noAnswer,
  parseAnswer,
  questionOf,
} from '../../workflows/answers';
import { applyLedger, liveTurnState, newEntry } from '../../workflows/ledger';
import { parkKeyOf } from '../../workflows/notifications';
import type { LedgerEntry } from '../../workflows/types';
import { AT, entryIn, intakeOver, planned, spec } from './helpers';

// ask_user (workflows/answers.ts): which answers apply, what the deadline is, and how the turn records them.

const asking = (args: Record<string, unknown>, over: Partial<LedgerEntry> = {}): LedgerEntry =>
  entryIn('awaiting_answer', { tool: 'ask_user', arguments: args, effect: 'read', ...over });
const CHOICES = { question: 'Which day?', choices: ['Monday', 'Friday'] };
const NUMBERS = { question: 'How many?', choices: ['10', '1', '5'] };

describe('answers: matchAnswer (an answer against the question)', () => {
  const cases: [string, Record<string, unknown>, string, string | RegExp][] = [
    ['free text is taken as it is', { question: 'Why?' }, '  because  ', '  because  '],
    ['a choice, exactly', CHOICES, 'Friday', 'Friday'],
    ['a choice, in another case and with spaces', CHOICES, '  friday ', 'Friday'],
    ['a choice by its number', CHOICES, '1', 'Monday'],
    [
      'a number past the choices',
      CHOICES,
      '3',
      /^'3' is not one of the choices: 1\. Monday, 2\. Friday; the question still waits$/,
    ],
    ['zero', CHOICES, '0', /not one of the choices/],
    ['not a choice', CHOICES, 'Sunday', /^'Sunday' is not one of the choices/],
    ['a prefix is not a choice', CHOICES, 'Fri', /not one of the choices/],
    // Issue #40 hole 4: '1' was taken as the first choice's number, '10', though it is the second's text.
    [
      "a choice's text that is another choice's number is ambiguous",
      NUMBERS,
      '1',
      /^'1' is ambiguous: it is choice 2's text and choice 1's number; for '1' answer '2', for '10' answer '10'; the question still waits$/,
    ],
    ["that choice by its number (2 is no choice's text)", NUMBERS, '2', '1'],
    ['a numeric choice whose number is past the choices, by its text', NUMBERS, '10', '10'],
    ['a numeric choice that is past the choices, by its text', NUMBERS, '5', '5'],
    ['a numeric choice by its number', NUMBERS, '3', '5'],
    ["a choice's text that is its own number", { question: 'n?', choices: ['1', 'two'] }, '1', '1'],
    ['exact case first', { question: 'y?', choices: ['Yes', 'yes'] }, 'yes', 'yes'],
    ['then any case, the first', { question: 'y?', choices: ['Yes', 'yes'] }, 'YES', 'Yes'],
    [
      "choices that are each other's numbers: said so",
      { question: 'n?', choices: ['2', '1'] },
      '1',
      /^'1' is ambiguous: it is choice 2's text and choice 1's number; no answer names '1' alone, no answer names '2' alone;/,
    ],
  ];
  for (const [name, args, said, want] of cases)
    it(name, () => {
      const r = matchAnswer(questionOf(args), said);
      if (typeof want === 'string') assert.deepEqual(r, { ok: true, answer: want });
      else assert.ok(!r.ok && want.test(r.why), JSON.stringify(r));
    });
});

describe('answers: judgeAnswer (whether the call is asking)', () => {
  const answered = applyLedger(asking(CHOICES), { type: 'answered', by: 'ann', answer: 'Friday' }, AT);
  const late = applyLedger(
    asking({ question: 'Go?', timeoutSeconds: 5 }),
    { type: 'unanswered', reason: noAnswer({ question: 'Go?', timeoutSeconds: 5 }) },
    AT,
  );
  const cases: [string, LedgerEntry | undefined, string | RegExp][] = [
    ['asking: applies', asking(CHOICES), 'Monday'],
    ['no such call', undefined, /^no tool call 'call_1' in this turn$/],
    ['a second answer', answered, /^already answered by ann: the first answer counts$/],
    ['after the deadline', late, /^no longer asking: no answer came within 5 seconds/],
    [
      'a call that does not ask',
      entryIn('awaiting_approval'),
      /^call 'call_1' \(send_email\) is not asking a question \(state awaiting_approval\)$/,
    ],
    ['a finished call that does not ask', entryIn('succeeded'), /is not asking a question \(state succeeded\)/],
  ];
  for (const [name, entry, want] of cases)
    it(name, () => {
      const r = judgeAnswer(entry, { toolCallId: 'call_1', answer: 'monday' });
      if (typeof want === 'string') assert.deepEqual(r, { ok: true, answer: want });
      else assert.ok(!r.ok && want.test(r.why), JSON.stringify(r));
    });
});

// Issue #40 hole 6: a deadline that fired is final. The turn's time when it takes an answer decides,
// not the order a worker that was down at the deadline sees the timer and the answer in.
describe('answers: judgeAnswer at the turn time it takes the answer (the deadline is final)', () => {
  const asked = (args: Record<string, unknown>) => asking(args, { events: [{ at: AT, type: 'awaiting_answer' }] });
  const t0 = Date.parse(AT);
  const DEADLINE = { question: 'Go?', timeoutSeconds: 5 };
  const cases: [string, LedgerEntry, number | undefined, string | RegExp][] = [
    ['before the deadline', asked(DEADLINE), t0 + 4999, 'yes'],
    [
      'at the deadline',
      asked(DEADLINE),
      t0 + 5000,
      /^not applied: the question's deadline \(5 seconds\) had passed when the turn took this answer; a deadline that passed is final$/,
    ],
    ['after it', asked(DEADLINE), t0 + 60_000, /^not applied: the question's deadline/],
    ['no deadline', asked({ question: 'Go?' }), t0 + 1e9, 'yes'],
    ['no time given (the client checks before sending)', asked(DEADLINE), undefined, 'yes'],
    [
      'past the deadline and not a choice: the deadline says',
      asked({ ...DEADLINE, choices: ['a', 'b'] }),
      t0 + 5000,
      /deadline/,
    ],
  ];
  for (const [name, entry, takenAt, want] of cases)
    it(name, () => {
      const r = judgeAnswer(entry, { toolCallId: 'call_1', answer: 'yes' }, takenAt);
      if (typeof want === 'string') assert.deepEqual(r, { ok: true, answer: want });
      else assert.ok(!r.ok && want.test(r.why), JSON.stringify(r));
    });
  it('the deadline is when the call asked plus its timeout', () => {
    assert.equal(answerDeadlineAt(asked(DEADLINE)), t0 + 5000);
    assert.equal(answerDeadlineAt(asked({ question: 'Go?' })), undefined);
  });
});

describe('answers: the deadline', () => {
  const cases: [string, unknown, number | undefined][] = [
    ['none', {}, undefined],
    ['seconds', { timeoutSeconds: 2 }, 2000],
    ['a fraction', { timeoutSeconds: 0.5 }, 500],
    ['zero is none', { timeoutSeconds: 0 }, undefined],
    ['negative is none', { timeoutSeconds: -1 }, undefined],
    ['not a number is none', { timeoutSeconds: '5' }, undefined],
    ['capped at 30 days', { timeoutSeconds: 1e12 }, MAX_ANSWER_TIMEOUT_S * 1000],
    ['arguments that are not an object', null, undefined],
  ];
  for (const [name, args, want] of cases)
    it(`${name} → ${want ?? 'waits until answered'}`, () => assert.equal(answerDeadlineMs(questionOf(args)), want));
});

describe('answers: parseAnswer (the signal payload)', () => {
  const cases: [string, unknown, RegExp | undefined][] = [
    ['complete', { toolCallId: 'q1', by: 'ann', answer: 'yes', decisionId: 'd1' }, undefined],
    ['not an object', 'yes', /^payload must be an object$/],
    ['no answer', { toolCallId: 'q1', by: 'ann' }, /^answer must be a non-empty string/],
    ['an empty answer', { toolCallId: 'q1', by: 'ann', answer: '' }, /^answer must be a non-empty string/],
    ['an answer too long', { toolCallId: 'q1', by: 'ann', answer: 'x'.repeat(8001) }, /at most 8000 characters/],
    ['no one answered', { toolCallId: 'q1', answer: 'yes' }, /^by must name who decided/],
    ['no call', { by: 'ann', answer: 'yes' }, /^toolCallId must be/],
    // Issue #40 hole 7: answers go through the one check of reserved names the approvals use.
    [
      'a reserved name',
      { toolCallId: 'q1', by: 'auto', answer: 'yes' },
      /^refused answer: by 'auto' is reserved for decisions no person made/,
    ],
    [
      'a reserved name in another case and spacing',
      { toolCallId: 'q1', by: ' System ', answer: 'yes' },
      /^refused answer/,
    ],
    ['a reserved name comes before a bad answer', { toolCallId: 'q1', by: 'auto', answer: '' }, /^refused answer/],
    ['a bad call id comes before the name', { by: 'auto', answer: 'yes' }, /^toolCallId must be/],
  ];
  for (const [name, raw, want] of cases)
    it(name, () => {
      const r = parseAnswer(raw);
      if (!want) assert.ok(r.ok);
      else assert.ok(!r.ok && want.test(r.why), JSON.stringify(r));
    });
  it('a reserved name is refused for an answer as for an approval: one check, one reason', () => {
    const raw = { toolCallId: 'q1', by: 'auto', answer: 'yes', decisionId: 'd1' };
    assert.deepEqual(parseAnswer(raw), {
      ok: false,
      why: refusedBy('answer', 'auto'),
      toolCallId: 'q1',
      by: 'auto',
      decisionId: 'd1',
    });
    const approve = parseDecision('approve', { toolCallId: 'q1', by: 'auto' });
    assert.equal(!approve.ok && approve.why, refusedBy('approve', 'auto'), 'the approvals go through the same check');
  });
  it('a refused payload keeps the well-formed ids it names', () =>
    assert.deepEqual(parseAnswer({ toolCallId: 'q1', by: 'ann' }), {
      ok: false,
      why: 'answer must be a non-empty string of at most 8000 characters',
      toolCallId: 'q1',
      by: 'ann',
    }));
});

describe('answers: the turn intake (signals never throw; every answer is audited)', () => {
  const setup = (e: LedgerEntry) => {
    const ledger = new Map([[e.toolCallId, e]]);
    const { intake, decisions } = intakeOver(ledger);
    intake.modelPending(false);
    return { ledger, intake, decisions };
  };
  it('an applied answer is the result, with who answered; a second is ignored with why', () => {
    const { ledger, intake, decisions } = setup(asking(CHOICES));
    intake.answer({ toolCallId: 'call_1', by: 'ann', answer: '2', decisionId: 'd1' });
    intake.answer({ toolCallId: 'call_1', by: 'bob', answer: 'Monday', decisionId: 'd2' });
    const e = ledger.get('call_1')!;
    assert.equal(e.state, 'succeeded');
    assert.equal(e.result, 'Friday');
    assert.equal(e.answeredBy, 'ann');
    assert.deepEqual(e.events.at(-1), { at: AT, type: 'answered', by: 'ann', answer: 'Friday', decisionId: 'd1' });
    assert.deepEqual(
      decisions.map((d) => [d.kind, d.decisionId, d.outcome, d.why]),
      [
        ['answer', 'd1', 'applied', undefined],
        ['answer', 'd2', 'ignored', 'already answered by ann: the first answer counts'],
      ],
    );
  });
  it('bad payloads and answers not among the choices change nothing', () => {
    const { ledger, intake, decisions } = setup(asking(CHOICES));
    for (const raw of [undefined, 42, { toolCallId: 'call_1', by: 'ann', answer: 'Sunday' }, { toolCallId: 'call_1' }])
      assert.doesNotThrow(() => intake.answer(raw));
    assert.equal(ledger.get('call_1')!.state, 'awaiting_answer');
    assert.deepEqual(
      decisions.map((d) => d.outcome),
      ['ignored', 'ignored', 'ignored', 'ignored'],
    );
  });
  it('an answer by a reserved name is refused and audited with its decisionId; the call still asks', () => {
    const { ledger, intake, decisions } = setup(asking(CHOICES));
    intake.answer({ toolCallId: 'call_1', by: 'auto', answer: 'Monday', decisionId: 'd-auto' });
    assert.equal(ledger.get('call_1')!.state, 'awaiting_answer');
    assert.deepEqual(
      decisions.map((d) => [d.kind, d.by, d.decisionId, d.outcome, d.why]),
      [['answer', 'auto', 'd-auto', 'ignored', refusedBy('answer', 'auto')]],
    );
  });
  it('an answer to an approval is refused; the call still awaits approval', () => {
    const { ledger, intake, decisions } = setup(entryIn('awaiting_approval'));
    intake.answer({ toolCallId: 'call_1', by: 'ann', answer: 'yes' });
    assert.equal(ledger.get('call_1')!.state, 'awaiting_approval');
    assert.match(decisions[0]!.why ?? '', /is not asking a question/);
  });
  it('an answer during a pending model response waits for its calls', () => {
    const ledger = new Map<string, LedgerEntry>();
    const { intake, decisions } = intakeOver(ledger);
    intake.answer({ toolCallId: 'call_1', by: 'ann', answer: 'why not' });
    assert.equal(decisions.length, 0);
    ledger.set('call_1', asking({ question: 'Why?' }));
    intake.modelPending(false);
    intake.callsCreated();
    assert.equal(ledger.get('call_1')!.result, 'why not');
  });
  it('after a cancel, an answer is not applied', () => {
    const e = asking({ question: 'Why?' });
    const ledger = new Map([[e.toolCallId, e]]);
    const { intake, decisions } = intakeOver(ledger, { cancelled: () => true });
    intake.modelPending(false);
    intake.answer({ toolCallId: 'call_1', by: 'ann', answer: 'x' });
    assert.equal(ledger.get('call_1')!.state, 'awaiting_answer');
    assert.match(decisions[0]!.why ?? '', /cancelled/);
  });
});

describe('answers: the ledger and the turn state', () => {
  it('an asking call starts in awaiting_answer, without approval, and parks the turn', () => {
    const e = newEntry(
      planned({ name: 'ask_user', spec: spec({ asks: true, requiresApproval: false }) }),
      'owx-1',
      1,
      AT,
    );
    assert.equal(e.state, 'awaiting_answer');
    assert.equal(e.approvedBy, undefined);
    assert.equal(e.events[0]!.type, 'awaiting_answer');
    assert.equal(parkKeyOf(e), 'question');
    assert.equal(liveTurnState([e, entryIn('running')]), 'awaiting_answer');
    assert.equal(liveTurnState([e, entryIn('awaiting_approval')]), 'awaiting_approval');
  });
  it('the built-in is planned as asking, needs no approval, and refuses bad arguments', () => {
    const s = specOf(askUserTool as unknown as Tool);
    assert.equal(s.asks, true);
    assert.equal(s.requiresApproval, false);
    assert.equal(
      askUserTool.input.safeParse({ question: 'Go?', choices: ['yes'] }).success,
      false,
      'one choice is no choice',
    );
    assert.equal(askUserTool.input.safeParse({ question: '' }).success, false);
    assert.equal(askUserTool.input.safeParse({ question: 'Go?', timeoutSeconds: 0 }).success, false);
    assert.ok(askUserTool.input.safeParse({ question: 'Go?', choices: ['yes', 'no'], timeoutSeconds: 30 }).success);
  });
});
