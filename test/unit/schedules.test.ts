import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import { formatList, formatRun, formatSchedule } from '../../cli/schedules';
import type { ScheduledRunView } from '../../client/schedules';
import { cronProblem, everyMs, formatEvery, parseEvery, timezoneProblem } from '../../client/scheduleSpec';
import {
  deliveryFor,
  openScheduledMessages,
  scheduleIdProblem,
  scheduleMessagePrefix,
  scheduledMessageId,
  scheduledRunWorkflowId,
  sessionKnows,
} from '../../workflows/scheduled';
import type { QueuedMessage, TurnSummary } from '../../workflows/types';

// Scheduled turns' pure parts: the cron and interval checks the client makes before the server, the
// IDs a schedule's runs and messages get, and the overlap policy (deliver, or skip while open).

describe('cronProblem: what --cron takes', () => {
  const cases: [string, unknown, RegExp | undefined][] = [
    ['5 fields', '0 9 * * MON-FRI', undefined],
    ['steps and lists', '*/15 8-18 1,15 * 1-5', undefined],
    ['month names', '0 0 1 JAN,JUL *', undefined],
    ['day 7 is Sunday', '0 0 * * 7', undefined],
    ['6 fields with a year', '0 12 * * * 2027', undefined],
    ['7 fields with seconds', '30 0 12 * * * *', undefined],
    ['a shorthand', '@daily', undefined],
    ['@every', '@every 90m', undefined],
    ['@every with a phase', '@every 1h/15m', undefined],
    ['a time zone prefix', 'CRON_TZ=Europe/Berlin 0 9 * * *', undefined],
    ['a comment', '0 9 * * * # morning', undefined],
    ['?', '0 9 ? * *', undefined],
    ['empty', '', /^`cron` needs an expression, e\.g\./],
    ['not a string', 5, /^`cron` needs an expression/],
    [
      'too few fields',
      '0 9 *',
      /^invalid `cron` '0 9 \*': it has 3 field\(s\), not 5 to 7; e\.g\. '0 9 \* \* MON-FRI'/,
    ],
    ['too many fields', '0 0 0 0 0 0 0 0', /it has 8 field\(s\)/],
    ['minute out of range', '60 * * * *', /minute '60' is out of 0-59/],
    ['hour out of range', '0 24 * * *', /hour '24' is out of 0-23/],
    ['day 0', '0 0 0 * *', /day-of-month '0' is out of 1-31/],
    ['month 13', '0 0 1 13 *', /month '13' is out of 1-12/],
    ['a bad name', '0 0 * * FUNDAY', /day-of-week 'FUNDAY' is not a number or a name/],
    ['a word for minutes', 'every * * * *', /minute 'every' is not a number;/],
    ['a zero step', '*/0 * * * *', /has a bad step/],
    ['a bad range', '1-2-3 * * * *', /has a bad range/],
    ['an unknown shorthand', '@sometimes', /unknown shorthand '@sometimes'/],
    ['@every without an interval', '@every soon', /'@every' needs an interval/],
  ];
  for (const [name, expr, expected] of cases)
    it(name, () => {
      const got = cronProblem(expr);
      if (expected === undefined) assert.equal(got, undefined);
      else assert.match(got ?? '', expected);
    });
});

describe('parseEvery and formatEvery: --every', () => {
  const cases: [string, number | RegExp][] = [
    ['30s', 30_000],
    ['15m', 900_000],
    ['1h30m', 5_400_000],
    ['1d', 86_400_000],
    ['0s', /shortest interval is 1s/],
    ['5 minutes', /^invalid `every` '5 minutes': use a number with s, m, h or d, e\.g\. 30m, 1h30m or 1d$/],
    ['1.5h', /use a number with s, m, h or d/],
    ['', /use a number/],
    ['10', /use a number/],
  ];
  for (const [text, expected] of cases)
    it(text || '(empty)', () => {
      const got = parseEvery(text);
      if (typeof expected === 'number') assert.deepEqual(got, { ms: expected });
      else assert.match('problem' in got ? got.problem : '', expected);
    });
  it('formatEvery writes what everyMs reads', () =>
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000_000 }), (secs) => {
        assert.equal(everyMs(formatEvery(secs * 1000)), secs * 1000);
      }),
    ));
});

describe('timezoneProblem: --timezone', () => {
  it('takes IANA names and UTC', () => {
    for (const zone of ['UTC', 'Europe/Berlin', 'America/New_York']) assert.equal(timezoneProblem(zone), undefined);
  });
  it('refuses anything else in one line', () =>
    assert.equal(
      timezoneProblem('Mars/Olympus'),
      "invalid `timezone` 'Mars/Olympus': use an IANA time zone name such as Europe/Berlin or UTC",
    ));
});

describe('schedule IDs and message IDs', () => {
  it('a schedule id: letters, digits, . _ -, no colon', () => {
    assert.equal(scheduleIdProblem('daily-report_1.0'), undefined);
    for (const bad of ['', 'a:b', '-a', 'a b', 'x'.repeat(101), 7])
      assert.match(scheduleIdProblem(bad) ?? '', /^invalid schedule id .*: use 1-100 letters, digits/);
  });
  it('a run of the schedule: its time becomes the message ID', () => {
    const run = `${scheduledRunWorkflowId('daily')}-2026-12-07T09:00:00Z`;
    assert.equal(scheduledMessageId('daily', run), 'schedule:daily:2026-12-07T09:00:00Z');
  });
  it('a run under another workflow ID keeps all of it, cut to the 200 characters a session keeps', () => {
    assert.equal(scheduledMessageId('daily', 'manual-1'), 'schedule:daily:manual-1');
    assert.equal(scheduledMessageId('d', 'x'.repeat(300)).length, 200);
  });
  it("one schedule's messages never carry another schedule's prefix (no ':' in an id)", () =>
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,20}$/),
        fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,20}$/),
        fc.string({ maxLength: 40 }),
        (a, b, run) => {
          const id = scheduledMessageId(a, `${scheduledRunWorkflowId(a)}-${run}`);
          assert.ok(id.startsWith(scheduleMessagePrefix(a)));
          assert.equal(id.startsWith(scheduleMessagePrefix(b)), a === b);
        },
      ),
    ));
});

describe('the overlap policy: deliver, or skip while the previous message is open', () => {
  const p = scheduleMessagePrefix('daily');
  const turn = (n: number, messageId: string, state: TurnSummary['state']): TurnSummary => ({
    n,
    workflowId: `session-s-turn-${n}`,
    messageId,
    state,
  });
  const queued = (messageId: string): QueuedMessage => ({ messageId, text: 'x', queue: true });
  const cases: [string, TurnSummary[], QueuedMessage[], string, RegExp | undefined][] = [
    ['a fresh session', [], [], `${p}t2`, undefined],
    ['earlier runs finished', [turn(1, `${p}t1`, 'completed'), turn(2, `${p}t0`, 'failed')], [], `${p}t2`, undefined],
    [
      'another turn runs (a user message): the scheduled one queues behind it',
      [turn(1, 'user-1', 'running')],
      [queued('user-2')],
      `${p}t2`,
      undefined,
    ],
    ["another schedule's message is open", [turn(1, 'schedule:daily-2:t1', 'running')], [], `${p}t2`, undefined],
    [
      'its previous turn runs or is parked',
      [turn(1, `${p}t1`, 'running')],
      [],
      `${p}t2`,
      /^skipped: the previous scheduled message schedule:daily:t1 is still open \(its turn 1 has not finished/,
    ],
    [
      'its previous message is queued',
      [turn(1, 'user-1', 'running')],
      [queued(`${p}t1`)],
      `${p}t2`,
      /previous scheduled message schedule:daily:t1 is still open \(it is still queued in the session\)/,
    ],
    [
      'its own message is queued (a retry)',
      [],
      [queued(`${p}t2`)],
      `${p}t2`,
      /^skipped: the session has message schedule:daily:t2 already/,
    ],
    [
      'its own message ran (a run under the same workflow ID)',
      [turn(1, `${p}t2`, 'completed')],
      [],
      `${p}t2`,
      /the session has message schedule:daily:t2 already/,
    ],
  ];
  for (const [name, turns, pending, messageId, expected] of cases)
    it(name, () => {
      const status = { turns, pending };
      const d = deliveryFor(openScheduledMessages(status, 'daily'), messageId, sessionKnows(status, messageId));
      if (expected === undefined) assert.deepEqual(d, { deliver: true });
      else assert.match(d.deliver ? '' : d.skipped, expected);
    });
  it('a message that steered a turn counts as taken', () =>
    assert.equal(sessionKnows({ turns: [{ ...turn(1, 'u', 'completed'), steered: ['m'] }], pending: [] }, 'm'), true));
});

describe('the CLI shows a schedule and its runs in a line each', () => {
  const run = (r: Partial<ScheduledRunView>): ScheduledRunView => ({
    workflowId: 'scheduled-d-2026-12-07T09:00:00Z',
    scheduledAt: '2026-12-07T09:00:00.000Z',
    takenAt: '2026-12-07T09:00:00.010Z',
    status: 'completed',
    ...r,
  });
  const cases: [string, ScheduledRunView, string][] = [
    ['delivered', run({ delivered: true, messageId: 'schedule:d:t' }), 'delivered message schedule:d:t'],
    ['skipped', run({ delivered: false, skipped: 'skipped: the previous …' }), 'skipped: the previous …'],
    ['failed', run({ status: 'failed', error: "session 's' has ended" }), "failed: session 's' has ended"],
    ['running', run({ status: 'running' }), 'running'],
  ];
  for (const [name, r, expected] of cases)
    it(name, () => assert.equal(formatRun(r), `scheduled-d-2026-12-07T09:00:00Z ${expected}`));
  it('a schedule: its session, when, pause note, message, policy, next and recent runs', () =>
    assert.equal(
      formatSchedule({
        scheduleId: 'd',
        sessionId: 's',
        message: 'send\nthe report',
        cron: '0 9 * * *',
        timezone: 'Europe/Berlin',
        paused: true,
        note: 'holiday',
        overlap: 'SKIP',
        nextRuns: [],
        recentRuns: [run({ delivered: true, messageId: 'schedule:d:t' })],
      }),
      [
        "schedule d: session s, cron '0 9 * * *' (Europe/Berlin), PAUSED (holiday)",
        '  message: send the report',
        '  overlap: SKIP; a run is skipped while the previous scheduled message is open in the session',
        '  next: none',
        '  recent runs (oldest first):',
        '    scheduled-d-2026-12-07T09:00:00Z delivered message schedule:d:t',
      ].join('\n'),
    ));
  it('the list', () => {
    assert.equal(formatList([]), 'no schedules');
    assert.equal(
      formatList([
        { scheduleId: 'd', sessionId: 's', every: '1h', paused: false, nextRun: '2026-12-07T10:00:00.000Z' },
      ]),
      'd  session s  every 1h  next 2026-12-07T10:00:00.000Z',
    );
  });
});
