import { randomUUID } from 'node:crypto';
import type { ScheduleDescription, ScheduleExecutionResult, ScheduleHandle } from '@temporalio/client';
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  WorkflowNotFoundError,
} from '@temporalio/client';
import type { ClientLike } from './own';
import { asOpenWorker } from './own';
import type { OpenWorkerClient } from './connection';
import { OpenWorkerError, checkSessionId } from './session';
import { cronProblem, formatEvery, parseEvery, timezoneProblem } from './scheduleSpec';
import { sessionWorkflowId } from '../workflows/ids';
import { messageProblem } from '../workflows/limits';
import type { ScheduledTurnInput, ScheduledTurnResult } from '../workflows/scheduled';
import { SCHEDULED_TURN_WORKFLOW, scheduleIdProblem, scheduledRunWorkflowId } from '../workflows/scheduled';

// Scheduled turns (docs/schedules.md): a Temporal Schedule whose action starts the small
// scheduledTurn workflow, which delivers the message to the session as a queued message.

export interface CreateScheduleInput {
  sessionId: string;
  /** The message each run sends. */
  message: string;
  /** A cron expression (`0 9 * * MON-FRI`, `@daily`); exactly one of `cron` and `every`. */
  cron?: string;
  /** An interval: `30m`, `1h30m`, `1d`. */
  every?: string;
  /** Default: `<sessionId>-<8 hex>`. */
  scheduleId?: string;
  /** IANA time zone of `cron` (default UTC). */
  timezone?: string;
  /** Created paused, with this note. */
  paused?: string;
}

/** One run of a schedule and what became of it. */
export interface ScheduledRunView {
  workflowId: string;
  scheduledAt: string;
  takenAt: string;
  /** The run's workflow status, lowercase: running, completed, failed, terminated, … */
  status: string;
  messageId?: string;
  delivered?: boolean;
  skipped?: string;
  error?: string;
}

export interface ScheduleView {
  scheduleId: string;
  sessionId: string;
  message?: string;
  cron?: string;
  every?: string;
  timezone?: string;
  paused: boolean;
  note?: string;
  overlap: string;
  nextRuns: string[];
  /** Oldest first; the server keeps the last 10. */
  recentRuns: ScheduledRunView[];
}

export interface ScheduleListItem {
  scheduleId: string;
  sessionId: string;
  cron?: string;
  every?: string;
  paused: boolean;
  note?: string;
  nextRun?: string;
}

/** What the schedule's memo holds: plain (no codec), so it names no message text. */
interface ScheduleMemo {
  sessionId?: string;
  cron?: string;
  every?: string;
}

/** Missed runs older than this are dropped after an outage rather than all run at once. */
const CATCHUP_WINDOW = '5 minutes';

/**
 * Creates a schedule that sends `message` to a running session on `cron` or `every`. Each run is
 * a turn of its own (queued, never steering), skipped while the schedule's previous message is
 * still open in the session; a run that finds the session gone fails and pauses the schedule.
 */
export async function createSchedule(client: ClientLike, input: CreateScheduleInput): Promise<ScheduleView> {
  const c = asOpenWorker(client);
  const sessionId = checkSessionId(input.sessionId);
  const scheduleId = input.scheduleId ?? `${sessionId.replace(/:/g, '.').slice(0, 90)}-${randomUUID().slice(0, 8)}`;
  const spec = specOf(input);
  const problem =
    scheduleIdProblem(scheduleId) ??
    messageProblem(input.message) ??
    (input.timezone !== undefined ? timezoneProblem(input.timezone) : undefined);
  if (problem) throw new OpenWorkerError(`${problem}; no schedule was created`, 'bad_input');
  await requireRunningSession(c, sessionId);
  const args: [ScheduledTurnInput] = [{ scheduleId, sessionId, text: input.message }];
  const memo: ScheduleMemo = { sessionId, ...(input.cron ? { cron: input.cron } : { every: input.every }) };
  try {
    await c.client.schedule.create({
      scheduleId,
      spec: { ...spec, ...(input.timezone ? { timezone: input.timezone } : {}) },
      action: {
        type: 'startWorkflow',
        workflowType: SCHEDULED_TURN_WORKFLOW,
        workflowId: scheduledRunWorkflowId(scheduleId),
        taskQueue: c.taskQueue,
        args,
        staticSummary: `Scheduled message to session ${sessionId} (schedule ${scheduleId})`,
      },
      // A run is a delivery of a second or so; the session's own check (workflows/scheduled.ts) skips
      // a run while the previous message is open, and a failed run pauses the schedule with a note.
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: CATCHUP_WINDOW, pauseOnFailure: true },
      memo: memo as Record<string, unknown>,
      ...(input.paused !== undefined ? { state: { paused: true, note: input.paused } } : {}),
    });
  } catch (err) {
    if (err instanceof ScheduleAlreadyRunning)
      throw new OpenWorkerError(
        `schedule '${scheduleId}' already exists; pick another \`scheduleId\`, or delete it first ('openworker-temporal schedule delete ${scheduleId}')`,
        'bad_input',
      );
    const msg = (err as Error).message ?? String(err);
    if (/invalid|time ?zone|unknown time/i.test(msg))
      throw new OpenWorkerError(
        `the server refused the schedule: ${msg.split('\n')[0]}; check \`cron\` and \`timezone\``,
        'bad_input',
      );
    throw err;
  }
  return describeSchedule(c, scheduleId);
}

function specOf(input: CreateScheduleInput): { cronExpressions: string[] } | { intervals: { every: number }[] } {
  if ((input.cron === undefined) === (input.every === undefined))
    throw new OpenWorkerError(
      `give exactly one of \`cron\` or \`every\` (e.g. \`cron\` '0 9 * * *' or \`every\` 1h); no schedule was created`,
      'bad_input',
    );
  if (input.cron !== undefined) {
    const problem = cronProblem(input.cron);
    if (problem) throw new OpenWorkerError(`${problem}; no schedule was created`, 'bad_input');
    return { cronExpressions: [input.cron] };
  }
  const every = parseEvery(input.every);
  if ('problem' in every) throw new OpenWorkerError(`${every.problem}; no schedule was created`, 'bad_input');
  return { intervals: [{ every: every.ms }] };
}

/** A schedule only for a session that runs: a typo would otherwise fail every run. */
async function requireRunningSession(c: OpenWorkerClient, sessionId: string): Promise<void> {
  const d = await c.client.workflow
    .getHandle(sessionWorkflowId(sessionId))
    .describe()
    .catch((err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    });
  const start = `start it first ('openworker-temporal turn ${sessionId} "<message>"')`;
  if (!d) throw new OpenWorkerError(`session '${sessionId}' not found; ${start}; no schedule was created`, 'not_found');
  if (d.type !== 'session' || d.status.name !== 'RUNNING')
    throw new OpenWorkerError(
      `session '${sessionId}' is not running (its workflow is a ${d.status.name.toLowerCase()} '${d.type}'); schedule a running session; no schedule was created`,
      'bad_input',
    );
}

/** The schedule's handle and description, or a one-line error when it is missing or not a scheduled turn. */
async function ownSchedule(c: OpenWorkerClient, scheduleId: string): Promise<[ScheduleHandle, ScheduleDescription]> {
  const problem = scheduleIdProblem(scheduleId);
  if (problem) throw new OpenWorkerError(problem, 'bad_input');
  const handle = c.client.schedule.getHandle(scheduleId);
  let d: ScheduleDescription;
  try {
    d = await handle.describe();
  } catch (err) {
    if (err instanceof ScheduleNotFoundError)
      throw new OpenWorkerError(
        `schedule '${scheduleId}' not found; list them with 'openworker-temporal schedule list'`,
        'not_found',
      );
    throw err;
  }
  if (d.action.workflowType !== SCHEDULED_TURN_WORKFLOW)
    throw new OpenWorkerError(
      `schedule '${scheduleId}' is not a scheduled turn (it starts '${d.action.workflowType}' workflows); manage it with 'temporal schedule'`,
      'bad_input',
    );
  return [handle, d];
}

/** The schedule: its session, message, when it runs, and what its recent runs did. */
export async function describeSchedule(client: ClientLike, scheduleId: string): Promise<ScheduleView> {
  const c = asOpenWorker(client);
  const [, d] = await ownSchedule(c, scheduleId);
  return viewOf(c, d);
}

async function viewOf(c: OpenWorkerClient, d: ScheduleDescription): Promise<ScheduleView> {
  const memo = (d.memo ?? {}) as ScheduleMemo;
  const input = d.action.args?.[0] as ScheduledTurnInput | undefined;
  return {
    scheduleId: d.scheduleId,
    sessionId: input?.sessionId ?? memo.sessionId ?? '',
    ...(input?.text !== undefined ? { message: input.text } : {}),
    ...whenOf(d, memo),
    ...(d.spec.timezone ? { timezone: d.spec.timezone } : {}),
    paused: d.state.paused,
    ...(d.state.note ? { note: d.state.note } : {}),
    overlap: d.policies.overlap ?? ScheduleOverlapPolicy.SKIP,
    nextRuns: d.info.nextActionTimes.slice(0, 3).map((t) => t.toISOString()),
    recentRuns: await Promise.all(d.info.recentActions.map((a) => runOf(c, a))),
  };
}

function whenOf(d: { spec: ScheduleDescription['spec'] }, memo: ScheduleMemo): { cron?: string; every?: string } {
  if (memo.cron) return { cron: memo.cron };
  if (memo.every) return { every: memo.every };
  const every = d.spec.intervals?.[0]?.every;
  return every !== undefined ? { every: formatEvery(every) } : {};
}

/** What one run did: its status, and its result (delivered or skipped) or its failure. */
async function runOf(c: OpenWorkerClient, a: ScheduleExecutionResult): Promise<ScheduledRunView> {
  const { workflowId, firstExecutionRunId } = a.action.workflow;
  const base = { workflowId, scheduledAt: a.scheduledAt.toISOString(), takenAt: a.takenAt.toISOString() };
  const handle = c.client.workflow.getHandle(workflowId, firstExecutionRunId);
  const d = await handle.describe().catch(() => undefined);
  if (!d) return { ...base, status: 'unknown' };
  const status = d.status.name.toLowerCase();
  if (status === 'running') return { ...base, status };
  try {
    const r = (await handle.result()) as ScheduledTurnResult;
    return {
      ...base,
      status,
      messageId: r.messageId,
      delivered: r.delivered,
      ...(r.skipped ? { skipped: r.skipped } : {}),
    };
  } catch (err) {
    return { ...base, status, error: failureMessage(err) };
  }
}

/** The innermost message of a workflow failure (the run's own reason). */
function failureMessage(err: unknown): string {
  let e = err as Error | undefined;
  while (e?.cause instanceof Error) e = e.cause;
  return (e?.message ?? String(err)).split('\n')[0]!;
}

/** The scheduled turns' schedules (of one session with `sessionId`); visibility may lag a create by a moment. */
export async function listSchedules(
  client: ClientLike,
  filter: { sessionId?: string } = {},
): Promise<ScheduleListItem[]> {
  const c = asOpenWorker(client);
  if (filter.sessionId !== undefined) checkSessionId(filter.sessionId);
  const items: ScheduleListItem[] = [];
  for await (const s of c.client.schedule.list()) {
    if (s.action?.workflowType !== SCHEDULED_TURN_WORKFLOW) continue;
    const memo = (s.memo ?? {}) as ScheduleMemo;
    if (filter.sessionId !== undefined && memo.sessionId !== filter.sessionId) continue;
    const next = s.info.nextActionTimes[0];
    items.push({
      scheduleId: s.scheduleId,
      sessionId: memo.sessionId ?? '',
      ...whenOf({ spec: s.spec ?? {} }, memo),
      paused: s.state.paused,
      ...(s.state.note ? { note: s.state.note } : {}),
      ...(next ? { nextRun: next.toISOString() } : {}),
    });
  }
  return items.sort((a, b) => a.scheduleId.localeCompare(b.scheduleId));
}

/** Pauses the schedule (`note` says why); runs already delivered are not touched. */
export async function pauseSchedule(client: ClientLike, scheduleId: string, note?: string): Promise<ScheduleView> {
  const c = asOpenWorker(client);
  const [handle] = await ownSchedule(c, scheduleId);
  await handle.pause(note ?? `paused by ${c.settings.user}`);
  return describeSchedule(c, scheduleId);
}

export async function unpauseSchedule(client: ClientLike, scheduleId: string, note?: string): Promise<ScheduleView> {
  const c = asOpenWorker(client);
  const [handle] = await ownSchedule(c, scheduleId);
  await handle.unpause(note ?? `unpaused by ${c.settings.user}`);
  return describeSchedule(c, scheduleId);
}

export async function deleteSchedule(
  client: ClientLike,
  scheduleId: string,
): Promise<{ scheduleId: string; deleted: true }> {
  const c = asOpenWorker(client);
  const [handle] = await ownSchedule(c, scheduleId);
  await handle.delete();
  return { scheduleId, deleted: true };
}

/**
 * Runs the schedule now (paused or not) and returns its run: closed (delivered, skipped or failed)
 * within `waitMs`, else still running. The schedule's overlap policy applies: while its previous
 * run is still running (no worker?) the trigger takes no action, which is an error here.
 */
export async function triggerSchedule(
  client: ClientLike,
  scheduleId: string,
  opts: { waitMs?: number } = {},
): Promise<ScheduledRunView> {
  const c = asOpenWorker(client);
  const [handle, before] = await ownSchedule(c, scheduleId);
  // Two actions in one second share a workflow ID (the server appends the time in seconds): tell runs apart by run ID.
  const seen = new Set(before.info.recentActions.map((a) => a.action.workflow.firstExecutionRunId));
  await handle.trigger(ScheduleOverlapPolicy.SKIP);
  const deadline = Date.now() + (opts.waitMs ?? 10_000);
  let action: ScheduleExecutionResult | undefined;
  let latest = before;
  for (;;) {
    // Once the run is found only its own state changes: the schedule need not be described again.
    if (!action) {
      latest = await handle.describe();
      action = latest.info.recentActions.find((a) => !seen.has(a.action.workflow.firstExecutionRunId));
    }
    if (action) {
      const run = await runOf(c, action);
      if (run.status !== 'running' || Date.now() > deadline) return run;
    } else if (Date.now() > deadline) {
      const running = latest.info.runningActions[0]?.workflow.workflowId;
      throw new OpenWorkerError(
        running
          ? `schedule '${scheduleId}' took no action: its previous run ${running} is still running (is a worker running on task queue '${c.taskQueue}'?)`
          : `schedule '${scheduleId}' shows no new run yet; see 'openworker-temporal schedule describe ${scheduleId}'`,
        'timeout',
      );
    }
    await new Promise((r) => setTimeout(r, 150));
  }
}
