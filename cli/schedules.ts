import type { Command } from 'commander';
import { positiveInt, print, withClient } from './common';
import type { ScheduleListItem, ScheduleView, ScheduledRunView } from '../client/schedules';
import {
  createSchedule,
  deleteSchedule,
  describeSchedule,
  listSchedules,
  pauseSchedule,
  triggerSchedule,
  unpauseSchedule,
} from '../client/schedules';

/** `schedule create|list|describe|pause|unpause|trigger|delete`: scheduled turns (docs/schedules.md). */
export function scheduleCommands(program: Command): void {
  const schedule = program
    .command('schedule')
    .description(
      "send a session a message on a cron or an interval (Temporal Schedules); 'schedule --help' lists the commands",
    );

  schedule
    .command('create <sessionId> <message>')
    .description('send <message> to a running session on --cron or --every, each time as a turn of its own')
    .option('--cron <expression>', "cron expression, e.g. '0 9 * * MON-FRI' or '@daily'")
    .option('--every <interval>', 'interval, e.g. 30m, 1h30m, 1d')
    .option('--id <scheduleId>', 'the schedule id (default: <sessionId>-<8 hex>)')
    .option('--timezone <iana>', 'time zone of --cron, e.g. Europe/Berlin (default: UTC)')
    .option('--paused <note>', 'create it paused, with this note')
    .action(
      async (
        sessionId: string,
        message: string,
        opts: { cron?: string; every?: string; id?: string; timezone?: string; paused?: string },
        cmd: Command,
      ) =>
        withClient(cmd, async (c) => {
          const v = await createSchedule(c, {
            sessionId,
            message,
            ...(opts.cron !== undefined ? { cron: opts.cron } : {}),
            ...(opts.every !== undefined ? { every: opts.every } : {}),
            ...(opts.id !== undefined ? { scheduleId: opts.id } : {}),
            ...(opts.timezone !== undefined ? { timezone: opts.timezone } : {}),
            ...(opts.paused !== undefined ? { paused: opts.paused } : {}),
          });
          print(cmd, v, `created schedule ${v.scheduleId}\n${formatSchedule(v)}`);
        }),
    );

  schedule
    .command('list')
    .description('the schedules of scheduled turns')
    .option('--session <id>', 'only this session')
    .action(async (opts: { session?: string }, cmd: Command) =>
      withClient(cmd, async (c) => {
        const items = await listSchedules(c, opts.session !== undefined ? { sessionId: opts.session } : {});
        print(cmd, items, formatList(items));
      }),
    );

  schedule
    .command('describe <scheduleId>')
    .description('a schedule: session, message, when it runs, and what its recent runs did')
    .action(async (scheduleId: string, _opts, cmd: Command) =>
      withClient(cmd, async (c) => {
        const v = await describeSchedule(c, scheduleId);
        print(cmd, v, formatSchedule(v));
      }),
    );

  schedule
    .command('pause <scheduleId>')
    .description('take no more actions until unpaused')
    .option('--note <text>', 'why (shown by list and describe)')
    .action(async (scheduleId: string, opts: { note?: string }, cmd: Command) =>
      withClient(cmd, async (c) => {
        const v = await pauseSchedule(c, scheduleId, opts.note);
        print(cmd, v, `paused schedule ${scheduleId}${v.note ? ` (${v.note})` : ''}`);
      }),
    );

  schedule
    .command('unpause <scheduleId>')
    .description('run on schedule again')
    .option('--note <text>', 'a note (shown by list and describe)')
    .action(async (scheduleId: string, opts: { note?: string }, cmd: Command) =>
      withClient(cmd, async (c) => {
        const v = await unpauseSchedule(c, scheduleId, opts.note);
        print(cmd, v, `unpaused schedule ${scheduleId}; next run ${v.nextRuns[0] ?? 'none'}`);
      }),
    );

  schedule
    .command('trigger <scheduleId>')
    .description('run it now (paused or not) and say what the run did: delivered, skipped or failed')
    .option('--timeout <seconds>', 'how long to wait for the run', positiveInt('--timeout'), 10)
    .action(async (scheduleId: string, opts: { timeout: number }, cmd: Command) =>
      withClient(cmd, async (c) => {
        const run = await triggerSchedule(c, scheduleId, { waitMs: opts.timeout * 1000 });
        const waiting =
          run.status === 'running'
            ? ` (after ${opts.timeout}s; is a worker running on task queue '${c.taskQueue}'? 'schedule describe' shows the outcome)`
            : '';
        print(cmd, run, `triggered schedule ${scheduleId}: ${formatRun(run)}${waiting}`);
      }),
    );

  schedule
    .command('delete <scheduleId>')
    .description('delete the schedule (messages it delivered stay in the session)')
    .action(async (scheduleId: string, _opts, cmd: Command) =>
      withClient(cmd, async (c) => {
        const r = await deleteSchedule(c, scheduleId);
        print(cmd, r, `deleted schedule ${scheduleId}`);
      }),
    );
}

const when = (s: { cron?: string; every?: string; timezone?: string }): string =>
  s.cron ? `cron '${s.cron}'${s.timezone ? ` (${s.timezone})` : ''}` : s.every ? `every ${s.every}` : 'no spec';

export function formatRun(r: ScheduledRunView): string {
  const what = r.error
    ? `failed: ${r.error}`
    : r.skipped
      ? r.skipped
      : r.delivered
        ? `delivered message ${r.messageId}`
        : r.status;
  return `${r.workflowId} ${what}`;
}

export function formatSchedule(v: ScheduleView): string {
  return [
    `schedule ${v.scheduleId}: session ${v.sessionId}, ${when(v)}${v.paused ? ', PAUSED' : ''}${v.note ? ` (${v.note})` : ''}`,
    ...(v.message !== undefined ? [`  message: ${v.message.replace(/\s+/g, ' ').slice(0, 200)}`] : []),
    `  overlap: ${v.overlap}; a run is skipped while the previous scheduled message is open in the session`,
    `  next: ${v.nextRuns.join(', ') || 'none'}`,
    ...(v.recentRuns.length
      ? ['  recent runs (oldest first):', ...v.recentRuns.map((r) => `    ${formatRun(r)}`)]
      : []),
  ].join('\n');
}

export function formatList(items: ScheduleListItem[]): string {
  if (!items.length) return 'no schedules';
  return items
    .map(
      (s) =>
        `${s.scheduleId}  session ${s.sessionId}  ${when(s)}${s.paused ? '  PAUSED' : ''}${s.note ? ` (${s.note})` : ''}${s.nextRun ? `  next ${s.nextRun}` : ''}`,
    )
    .join('\n');
}
