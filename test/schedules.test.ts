import { strict as assert } from 'node:assert';
import { messageIdFor } from '../activities/tools/sendEmail';
import { approve } from '../client/decisions';
import { inbox } from '../client/inspect';
import { sessionStatus, waitForTurn } from '../client/session';
import type { OpenWorkerError } from '../client/session';
import {
  createSchedule,
  deleteSchedule,
  describeSchedule,
  listSchedules,
  triggerSchedule,
  unpauseSchedule,
} from '../client/schedules';
import type { CreateScheduleInput, ScheduleListItem, ScheduleView, ScheduledRunView } from '../client/schedules';
import { sessionWorkflowId } from '../workflows/ids';
import { SCHEDULED_TURN_WORKFLOW } from '../workflows/scheduled';
import type { ScheduledTurnResult } from '../workflows/scheduled';
import { recordHistory } from './support/histories';
import { runCli, runClis } from './support/processes';
import { emailCall, eventually, scripted, startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Scheduled turns against a real server and a real worker process: a schedule's run delivers its
// message as a turn of its own, whose protected call parks in the inbox like any other; a run while
// that message is open skips; a run for a session that ended fails and pauses the schedule.

describe('scheduled turns (Temporal Schedules)', function () {
  this.timeout(120_000);
  const w = useWorld();
  const cli = async (...args: string[]) => runCli([...args, '--task-queue', w.taskQueue]);
  const json = async <T>(...args: string[]): Promise<T> => {
    const r = await cli('--json', ...args);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    return JSON.parse(r.stdout) as T;
  };

  it('a triggered run parks its protected call in the inbox, runs after approval, skips while open, and pause/list/delete work', async () => {
    await w.worker(
      scripted([
        { text: 'Ready.' },
        { toolCalls: [emailCall('s1', 'ops@example.com')] },
        { text: 'Report sent.' },
        { text: 'Nothing new.' },
      ]),
    );
    const sessionId = uniq('sched');
    assert.equal((await startTurn(w.c, sessionId, 'hello')).state, 'completed');
    const scheduleId = uniq('daily');
    const created = await json<ScheduleView>(
      'schedule',
      'create',
      sessionId,
      'send the daily report',
      '--cron',
      '0 9 * * MON-FRI',
      '--id',
      scheduleId,
    );
    assert.equal(created.sessionId, sessionId);
    assert.equal(created.cron, '0 9 * * MON-FRI');
    assert.equal(created.message, 'send the daily report');
    assert.equal(created.overlap, 'SKIP');
    assert.ok(created.nextRuns.length > 0);
    await assert.rejects(
      createSchedule(w.c, { sessionId, message: 'x', every: '1h', scheduleId }),
      /schedule '.*' already exists; pick another `scheduleId`, or delete it first/,
    );

    // Run 1 delivers; its turn's send_email parks for approval and shows in the inbox.
    const first = await triggerSchedule(w.c, scheduleId);
    assert.equal(first.status, 'completed', JSON.stringify(first));
    assert.equal(first.delivered, true);
    assert.ok(first.messageId!.startsWith(`schedule:${scheduleId}:`), first.messageId);
    const parked = await waitForTurn(w.c, { sessionId, messageId: first.messageId!, timeoutMs: 30_000 });
    assert.equal(parked.state, 'awaiting_approval');
    assert.equal(parked.turn, 2);
    const waiting = await eventually(async () => {
      const items = await inbox(w.c, { sessionId });
      return items.length > 0 && items;
    }, 'the scheduled call is in the inbox');
    assert.deepEqual(
      waiting.map((i) => [i.tool, i.turn]),
      [['send_email', 2]],
    );

    // Run 2 while run 1's turn waits for a decision: skipped, nothing queued. Two actions in one
    // second share a workflow ID (and so a message ID), so run 2 starts in a later second.
    await afterSecondOf(first.messageId!);
    const second = await json<ScheduledRunView>('schedule', 'trigger', scheduleId);
    assert.equal(second.delivered, false);
    assert.match(second.skipped!, new RegExp(`previous scheduled message ${first.messageId} is still open .*turn 2`));
    assert.deepEqual((await sessionStatus(w.c, sessionId)).pending, []);

    await approve(w.c, { sessionId, toolCallId: 's1', by: 'alice' });
    const done = await turnClosed(w.c, parked);
    assert.equal(done.state, 'completed');
    assert.equal(w.sink.deliveries(messageIdFor(waiting[0]!.executionId)), 1);
    // The session records the turn's end a moment after the turn's workflow closes.
    const status = await eventually(async () => {
      const st = await sessionStatus(w.c, sessionId);
      return st.turns[1]?.state === 'completed' && st;
    }, 'the session records turn 2');
    assert.deepEqual(
      status.turns.map((t) => [t.n, t.messageId, t.state]),
      [
        [1, status.turns[0]!.messageId, 'completed'],
        [2, first.messageId, 'completed'],
      ],
    );
    const texts = status.transcript.map((m) => m.content);
    assert.ok(texts.includes('send the daily report') && texts.includes('Report sent.'), JSON.stringify(texts));

    // Run 3: the previous message is done, so it delivers again.
    const third = await triggerSchedule(w.c, scheduleId);
    assert.equal(third.delivered, true, JSON.stringify(third));
    assert.equal((await waitForTurn(w.c, { sessionId, messageId: third.messageId!, timeoutMs: 30_000 })).turn, 3);

    // A run started again under run 3's workflow ID sends run 3's message ID: no second turn.
    const again = await w.c.client.workflow.execute(SCHEDULED_TURN_WORKFLOW, {
      workflowId: third.workflowId,
      taskQueue: w.taskQueue,
      args: [{ scheduleId, sessionId, text: 'send the daily report' }],
    });
    assert.equal((again as ScheduledTurnResult).messageId, third.messageId);
    assert.equal((again as ScheduledTurnResult).delivered, false);
    assert.match((again as ScheduledTurnResult).skipped!, /the session has message .* already/);
    await recordHistory(first.workflowId, 'scheduled-turn-delivered');
    await recordHistory(third.workflowId, 'scheduled-turn-skipped');
    await eventually(async () => (await sessionStatus(w.c, sessionId)).turns.at(-1)?.state === 'completed', 'turn 3');
    assert.equal((await sessionStatus(w.c, sessionId)).turns.length, 3);

    // In the Web UI a run carries its schedule's summary and TemporalScheduledById (the manual run has none).
    const runHandle = w.c.client.workflow.getHandle(first.workflowId);
    assert.equal(
      await (await runHandle.describe()).staticSummary(),
      `Scheduled message to session ${sessionId} (schedule ${scheduleId})`,
    );
    await eventually(async () => {
      let n = 0;
      for await (const _ of w.c.client.workflow.list({ query: `TemporalScheduledById = "${scheduleId}"` })) n++;
      return n === 3;
    }, 'visibility lists the schedule its 3 runs');

    // describe lists what each run did; pause, list, unpause, delete.
    const described = await json<ScheduleView>('schedule', 'describe', scheduleId);
    assert.deepEqual(
      described.recentRuns.map((r) => (r.skipped ? 'skipped' : r.delivered ? 'delivered' : r.status)),
      ['delivered', 'skipped', 'delivered'],
    );
    const paused = await json<ScheduleView>('schedule', 'pause', scheduleId, '--note', 'holiday');
    assert.equal(paused.paused, true);
    assert.equal(paused.note, 'holiday');
    await eventually(
      async () => (await listSchedules(w.c, { sessionId }))[0]?.paused,
      'list (visibility) shows the pause',
    );
    const listed = await json<ScheduleListItem[]>('schedule', 'list', '--session', sessionId);
    assert.deepEqual(
      listed.map((s) => [s.scheduleId, s.sessionId, s.cron, s.note]),
      [[scheduleId, sessionId, '0 9 * * MON-FRI', 'holiday']],
    );
    assert.equal((await unpauseSchedule(w.c, scheduleId)).paused, false);
    assert.deepEqual(await json('schedule', 'delete', scheduleId), { scheduleId, deleted: true });
    await assert.rejects(
      describeSchedule(w.c, scheduleId),
      (err: OpenWorkerError) =>
        err.code === 'not_found' &&
        err.message === `schedule '${scheduleId}' not found; list them with 'openworker-temporal schedule list'`,
    );
    await eventually(async () => !(await listSchedules(w.c, { sessionId })).length, 'list drops it');
  });

  it('a run for a session that has ended fails with the reason and pauses the schedule; bad input is one line', async () => {
    await w.worker(scripted([{ text: 'Ready.' }]));
    const sessionId = uniq('sched-end');
    await startTurn(w.c, sessionId, 'hello');
    const scheduleId = uniq('hourly');
    await json('schedule', 'create', sessionId, 'check the queue', '--every', '1h', '--id', scheduleId);
    await w.c.client.workflow.getHandle(sessionWorkflowId(sessionId)).terminate('test: the session ends');
    const run = await triggerSchedule(w.c, scheduleId);
    assert.equal(run.status, 'failed');
    assert.match(run.error!, new RegExp(`^session '${sessionId}' has ended .*delivered nothing; delete the schedule`));
    await recordHistory(run.workflowId, 'scheduled-turn-session-ended');
    const paused = await eventually(async () => {
      const d = await describeSchedule(w.c, scheduleId);
      return d.paused && d;
    }, 'pause on failure');
    assert.equal(paused.every, '1h');
    assert.match(paused.recentRuns[0]!.error!, /has ended/);
    // trigger runs a paused schedule too.
    assert.equal((await triggerSchedule(w.c, scheduleId)).status, 'failed');

    // What the client refuses before it asks the server: the library's one-line errors.
    const refused: [Partial<CreateScheduleInput>, RegExp][] = [
      [{ cron: 'every day' }, /^invalid `cron` 'every day': it has 2 field\(s\), not 5 to 7/],
      [{ every: '5 minutes' }, /^invalid `every` '5 minutes': use a number with s, m, h or d/],
      [{ every: '1h', cron: '@daily' }, /^give exactly one of `cron` or `every`/],
      [{ every: '1h', scheduleId: 'a:b' }, /^invalid schedule id 'a:b': use 1-100 letters/],
      [{ every: '1h', sessionId: 'bad id' }, /^invalid session id 'bad id'/],
      [{ every: '1h', message: ' ' }, /^the message is empty; say what the agent should do; no schedule was created$/],
    ];
    for (const [given, expected] of refused)
      await assert.rejects(
        createSchedule(w.c, { sessionId, message: 'x', ...given }),
        (err: OpenWorkerError) => err.code === 'bad_input' && expected.test(err.message),
        JSON.stringify(given),
      );
    await assert.rejects(describeSchedule(w.c, 'bad id'), /^OpenWorkerError: invalid schedule id 'bad id'/);

    // The CLI: the same errors with flags, and what only the server knows; each one line.
    const bad: [string[], RegExp][] = [
      [
        ['create', sessionId, 'x', '--cron', '61 * * * *'],
        /^error: invalid --cron '61 \* \* \* \*': minute '61' is out of 0-59; e\.g\./,
      ],
      [
        ['create', sessionId, 'x'],
        /^error: give exactly one of --cron or --every \(e\.g\. --cron '0 9 \* \* \*' or --every 1h\)/,
      ],
      [
        ['create', sessionId, 'x', '--every', '1h', '--timezone', 'Mars/Olympus'],
        /^error: invalid --timezone 'Mars\/Olympus': use an IANA time zone name/,
      ],
      [['create', sessionId, '--every', '1h'], /^error: missing required argument 'message'/],
      [['create', uniq('nobody'), 'x', '--every', '1h'], /^error: session '.*' not found; start it first/],
      [
        ['create', sessionId, 'x', '--every', '1h'],
        /^error: session '.*' is not running \(its workflow is a terminated 'session'\)/,
      ],
      [['pause', 'no-such-schedule'], /^error: schedule 'no-such-schedule' not found; list them with/],
      [['trigger', 'no-such-schedule'], /^error: schedule 'no-such-schedule' not found/],
    ];
    // Independent CLI processes: a few at a time keeps the test short on a shared machine.
    const results = await runClis(
      bad.map(([args]) => ['schedule', ...args, '--task-queue', w.taskQueue]),
      {},
      4,
    );
    bad.forEach(([args, expected], i) => {
      const r = results[i]!;
      assert.notEqual(r.code, 0, args.join(' '));
      assert.equal(r.stderr.trim().split('\n').length, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr.trim(), expected, args.join(' '));
    });
    await deleteSchedule(w.c, scheduleId);
  });
});

/** Waits until the wall clock has left the second stamped at the end of a scheduled message ID. */
async function afterSecondOf(messageId: string): Promise<void> {
  const stamp = Date.parse(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.exec(messageId)?.[0] ?? '');
  assert.ok(Number.isFinite(stamp), `no time at the end of ${messageId}`);
  while (Date.now() < stamp + 1000) await new Promise((r) => setTimeout(r, stamp + 1000 - Date.now() + 5));
}
