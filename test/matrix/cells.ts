import type { FaultPoint } from '../../activities/faults';
import type { RecoveryDecision, RecoveryPolicy } from '../../workflows/types';
import type { PeerFault } from './peers';

/**
 * The fault matrix as data: each row is a moment at which something dies or misbehaves, each
 * column a recovery policy, each cell the outcome a user may rely on and the number of effects the
 * external system must show. test/matrix.test.ts runs every cell against real processes; the
 * checker (checker.ts) then reads all three oracles. One file on purpose (over 400 lines): the
 * rows are read as one table, and docs/guarantees.md is generated from it.
 */

export type Policy = RecoveryPolicy;
export type PeerKind = 'http' | 'smtp';

/** What the runner does to the system for one cell, in the order listed. */
export interface Plan {
  /** SIGKILL the worker while the call awaits approval; the approval is sent while no worker runs. */
  downForApproval?: boolean;
  /** A fault point armed on the first worker, which is SIGKILLed when it reports reaching it. */
  point?: FaultPoint | { protected: FaultPoint; idempotent: FaultPoint };
  /** A fault the external system applies to this call's request. */
  peerFault?: PeerFault;
  /** SIGKILL the worker when the external system reports holding the committed response. */
  killWhenHanging?: boolean;
  /** The tool's start-to-close timeout. */
  timeout?: string;
  /** How long the tool says the external system keeps idempotency keys. */
  keyRetention?: string;
  /** After the kill, the external system's clock passes its key retention: it forgets the key. */
  forgetKeys?: boolean;
  /** Before the approval, another caller (an older build) used the call's key with other arguments. */
  foreignUse?: boolean;
  /** Let a held request go on once the call parks, a retry meets its lock (409), or the turn closes. */
  release?: boolean;
  /** F11: the file-backed Temporal server is restarted at the fault (after the worker is killed). */
  restartServer?: boolean;
  /** Rows that are a scenario of their own (scenarios.ts) rather than a fault in the standard flow. */
  scenario?: ScenarioName;
}

export type ScenarioName =
  | 'reset'
  | 'continue-as-new'
  | 'workflow-retry'
  | 'new-build'
  | 'duplicate-approve'
  | 'approve-after-reject'
  | 'reject-after-approve'
  | 'stale-digest'
  | 'early-recover'
  | 'conflicting-recovers'
  | 'cancel-parked'
  | 'other-session'
  | 'partition-retry';

export interface Expect {
  /** The reasons the call parks in recovery_required, in order; each park is answered by `human`. */
  parks?: RegExp[];
  human?: RecoveryDecision[];
  state: 'succeeded' | 'failed' | 'rejected' | 'recovery_required';
  /** Approvals applied (default 1). */
  approvals?: 0 | 1;
  /** Effects of this call in the external system's ledger (foreign ones excluded). */
  effects: 0 | 1;
  /** Activities scheduled for the call (a human "retry" or a reconcile "not applied" adds one). */
  runs: number;
  /** Attempts of the tool adapter, when the cell pins them. */
  attempts?: number;
}

export interface Row {
  row: string;
  variant?: string;
  title: string;
  /** What the cell means for a user, one line (docs/guarantees.md). */
  meaning: string;
  peers: PeerKind[];
  plan: Plan;
  expect: Partial<Record<`${PeerKind}:${Policy}` | Policy, Expect>>;
}

export interface Cell {
  id: string;
  row: Row;
  peer: PeerKind;
  policy: Policy;
  expect: Expect;
}

const ok = (runs = 1, attempts?: number): Expect => ({
  state: 'succeeded',
  effects: 1,
  runs,
  ...(attempts ? { attempts } : {}),
});
const parks = (reasons: RegExp[], human: RecoveryDecision[], final: Omit<Expect, 'parks' | 'human'>): Expect => ({
  parks: reasons,
  human,
  ...final,
});
const UNKNOWN_AFTER_DISPATCH = /outcome unknown after dispatch/;

export const ROWS: Row[] = [
  {
    row: 'F1',
    title: 'worker down while the call waits for approval; the approval is sent while it is down',
    meaning: 'Approvals are durable signals: they wait for a worker, and the call runs once when one starts.',
    peers: ['http', 'smtp'],
    plan: { downForApproval: true },
    expect: { manual: ok(), idempotent: ok(), reconcile: ok() },
  },
  {
    row: 'F2',
    title: 'crash after the approval is recorded, before the activity is scheduled',
    meaning: 'The approval is in history; the next worker schedules the call once.',
    peers: ['http', 'smtp'],
    plan: { point: 'turn.before_schedule' },
    expect: { manual: ok(), idempotent: ok(), reconcile: ok() },
  },
  {
    row: 'F3',
    title: 'activity started, crash before the external request is sent',
    meaning:
      'manual asks a human (the marker says it may have been sent); idempotent retries with the same key; reconcile asks the system, waits out the old attempt, then runs once more.',
    peers: ['http', 'smtp'],
    plan: { point: { protected: 'tool.after_dispatch', idempotent: 'tool.before_dispatch' } },
    expect: {
      manual: parks([UNKNOWN_AFTER_DISPATCH], ['retry'], { state: 'succeeded', effects: 1, runs: 2 }),
      idempotent: ok(1, 2),
      reconcile: ok(2),
    },
  },
  {
    row: 'F3',
    variant: 'before the dispatch marker',
    title: 'activity started, crash before it recorded "dispatched"',
    meaning: 'Without the marker the tool was provably not called: it runs again by itself, once.',
    peers: ['http', 'smtp'],
    plan: { point: 'tool.before_dispatch' },
    expect: { manual: ok(2), reconcile: ok(2) },
  },
  {
    row: 'F4',
    title: 'the external system committed, the response is lost',
    meaning: 'manual asks a human; idempotent retries and gets the stored answer; reconcile finds the effect.',
    peers: ['http', 'smtp'],
    plan: { peerFault: 'commit-then-drop' },
    expect: {
      manual: parks([UNKNOWN_AFTER_DISPATCH], ['succeeded'], { state: 'succeeded', effects: 1, runs: 1 }),
      idempotent: ok(1, 2),
      reconcile: ok(1),
    },
  },
  {
    row: 'F5',
    title: 'response received, crash before the completion reaches the server',
    meaning: 'The same as a lost response: never a blind second send.',
    peers: ['http', 'smtp'],
    plan: { point: 'tool.after_execute' },
    expect: {
      manual: parks([/heartbeat timeout/], ['succeeded'], { state: 'succeeded', effects: 1, runs: 1 }),
      idempotent: ok(1, 2),
      reconcile: ok(1),
    },
  },
  {
    row: 'F6',
    title: 'completion recorded, crash before the workflow processes it',
    meaning: 'The result is in history; the next worker reads it, nothing runs again.',
    peers: ['http', 'smtp'],
    plan: { point: 'turn.after_result' },
    expect: { manual: ok(1, 1), idempotent: ok(1, 1), reconcile: ok(1, 1) },
  },
  {
    row: 'F7',
    title: 'zombie: the timeout fires while the original request still runs (slow external system)',
    meaning: 'A timed-out attempt that may still land is never raced by a blind retry: same key, a 409, or a human.',
    peers: ['http', 'smtp'],
    plan: { peerFault: 'slow', timeout: '3s', release: true },
    expect: {
      manual: parks([UNKNOWN_AFTER_DISPATCH], ['succeeded'], { state: 'succeeded', effects: 1, runs: 1 }),
      'http:idempotent': ok(1),
      // The person's retry asks reconcile() first: the released request has committed, so it succeeds
      // via reconcile without a second run (before #27 it ran again and met the stored answer).
      'http:reconcile': parks([/still in flight/], ['retry'], { state: 'succeeded', effects: 1, runs: 1 }),
      'smtp:reconcile': ok(1),
    },
  },
  {
    row: 'F8',
    title: 'the external system answers 5xx after committing',
    meaning: 'An error answer is not proof of "not applied": the call stops and asks.',
    peers: ['http', 'smtp'],
    plan: { peerFault: 'commit-then-5xx' },
    expect: {
      manual: parks([UNKNOWN_AFTER_DISPATCH], ['succeeded'], { state: 'succeeded', effects: 1, runs: 1 }),
      'http:idempotent': parks([/replays a stored HTTP 500/], ['succeeded'], {
        state: 'succeeded',
        effects: 1,
        runs: 1,
      }),
      'http:reconcile': parks([/stored HTTP 500/], ['succeeded'], { state: 'succeeded', effects: 1, runs: 1 }),
      'smtp:reconcile': ok(1),
    },
  },
  {
    row: 'F9',
    title: "a retry after the external system's key retention expired",
    meaning:
      'Once the system may have forgotten the key, nothing is sent again, not even on a human "retry": it escalates.',
    peers: ['http'],
    plan: { peerFault: 'commit-then-hang', killWhenHanging: true, forgetKeys: true, keyRetention: '2s' },
    expect: {
      manual: parks([UNKNOWN_AFTER_DISPATCH, /not retried: .*keeps idempotency keys/], ['retry', 'succeeded'], {
        state: 'succeeded',
        effects: 1,
        runs: 2,
      }),
      idempotent: parks([/keeps idempotency keys/], ['succeeded'], { state: 'succeeded', effects: 1, runs: 1 }),
      reconcile: parks([/lookup found nothing, but .*keeps idempotency keys/], ['succeeded'], {
        state: 'succeeded',
        effects: 1,
        runs: 1,
      }),
    },
  },
  {
    row: 'F10',
    title: 'payload drift: the key already holds other arguments',
    meaning:
      'A key reused with other arguments is caught (422, or a lookup that does not match) and never claimed as this call.',
    peers: ['http'],
    plan: { foreignUse: true },
    expect: {
      manual: parks([/payload drift/], ['failed'], { state: 'failed', effects: 0, runs: 1 }),
      idempotent: parks([/payload drift/], ['failed'], { state: 'failed', effects: 0, runs: 1 }),
      reconcile: parks([/different payment \(payload drift\)/], ['failed'], { state: 'failed', effects: 0, runs: 1 }),
    },
  },
];

/** F11: the Temporal server itself restarts (on its file) at each of F1–F6, after the worker died. */
export const SERVER_RESTART_ROWS: Row[] = ROWS.filter(
  (r) => ['F1', 'F2', 'F3', 'F4', 'F5', 'F6'].includes(r.row) && !r.variant,
).map((r) => ({
  ...r,
  row: 'F11',
  variant: `server restart at ${r.row}`,
  title: `${r.title}, and the Temporal server restarts`,
  meaning: `As ${r.row}, with the file-backed server restarted at that instant: nothing is lost, nothing repeats.`,
  peers: ['http'],
  plan: { ...r.plan, restartServer: true },
}));

const scenario = (
  row: string,
  name: ScenarioName,
  title: string,
  meaning: string,
  expect: Row['expect'],
  plan: Plan = {},
): Row => ({
  row,
  variant: name,
  title,
  meaning,
  peers: ['http'],
  plan: { ...plan, scenario: name },
  expect,
});
const rerunParks = (why: RegExp) => parks([why], ['succeeded'], { state: 'succeeded', effects: 1, runs: 0 });

/** F12, F13: runs of a turn that Temporal itself starts again, and a new build taking over. */
export const RERUN_ROWS: Row[] = [
  scenario(
    'F12',
    'reset',
    'the turn is reset to its first workflow task after the effect (the approval is re-applied)',
    'A reset run keeps the execution ID; a protected call asks a human instead of sending again, an idempotent one replays under the same key.',
    { manual: rerunParks(/this turn was reset/), idempotent: ok(1), reconcile: rerunParks(/this turn was reset/) },
  ),
  scenario(
    'F12',
    'continue-as-new',
    'the session continues as new after each turn; a client re-sends an old message',
    'Turn numbers (and so keys) continue across runs; a re-sent message makes no new turn and no new effect.',
    { manual: ok(), idempotent: ok(), reconcile: ok() },
  ),
  scenario(
    'F12',
    'workflow-retry',
    'a turn started with a workflow retry policy times out after the effect and is retried',
    'Even if someone adds a workflow-level retry, the retried run cannot send again by itself: same key, human asked.',
    { manual: rerunParks(/this turn was retried/), idempotent: ok(1), reconcile: rerunParks(/this turn was retried/) },
  ),
  scenario(
    'F13',
    'new-build',
    'between approval and execution the worker is replaced by a new build',
    'The in-flight history replays on the new build (plus the recorded histories of older builds in CI), and the call runs once.',
    { manual: ok(), idempotent: ok(), reconcile: ok() },
  ),
];

/** The human side, against the waiting / executing / recovery_required states. */
export const HUMAN_ROWS: Row[] = [
  scenario(
    'H',
    'duplicate-approve',
    'waiting: the same approval twice at once',
    'One applies, the other is recorded as a duplicate; one effect.',
    { manual: ok() },
  ),
  scenario('H', 'approve-after-reject', 'waiting: reject, then approve', 'The rejection stands; nothing runs.', {
    manual: { state: 'rejected', effects: 0, runs: 0, approvals: 0 },
  }),
  scenario('H', 'reject-after-approve', 'executing: approve, then reject', 'The approval stands; one effect.', {
    manual: ok(),
  }),
  scenario(
    'H',
    'stale-digest',
    'waiting: an approval for other arguments',
    'Ignored; the call keeps waiting for an approval of what it will send.',
    { manual: ok() },
  ),
  scenario(
    'H',
    'early-recover',
    'executing: a recovery decision before the call parked',
    'Refused; when the call parks it waits for a decision made after seeing it.',
    {
      manual: parks([UNKNOWN_AFTER_DISPATCH], ['succeeded'], { state: 'succeeded', effects: 1, runs: 1 }),
    },
  ),
  scenario(
    'H',
    'conflicting-recovers',
    'recovery_required: "succeeded" and "failed" at once',
    'Exactly one applies; the other is recorded as ignored.',
    {
      manual: parks([UNKNOWN_AFTER_DISPATCH], ['succeeded'], { state: 'succeeded', effects: 1, runs: 1 }),
    },
  ),
  scenario(
    'H',
    'cancel-parked',
    'recovery_required: the turn is cancelled while the call is parked',
    'The transcript stays valid: the parked call gets an "outcome unknown, check before doing it again" result, never silence.',
    {
      manual: { parks: [UNKNOWN_AFTER_DISPATCH], human: [], state: 'recovery_required', effects: 1, runs: 1 },
    },
  ),
  scenario(
    'H',
    'other-session',
    "waiting: decisions for an unknown call or another session's call",
    'Ignored and recorded; only a decision for this call applies.',
    { manual: ok() },
  ),
];

/**
 * F14: a partition (test/support/partition.ts) cuts the worker off from Temporal mid-send at a slow
 * SMTP server that commits only when it answers, and only to a client still connected; a person
 * decides "retry" with the CLI. test/fence.test.ts runs the same flow with `recover --now`.
 */
export const PARTITION_ROWS: Row[] = [
  {
    row: 'F14',
    variant: 'partition-retry',
    title:
      'partition: the worker is cut off from Temporal while a slow SMTP server holds its message uncommitted; a person decides "retry"',
    meaning:
      "The retry waits out the cut-off attempt's window (dispatch + start-to-close + 2 s), by which time that attempt has hung up and its message is never committed: one effect. `recover --now` skips the wait and accepts a second.",
    peers: ['smtp'],
    plan: { scenario: 'partition-retry', peerFault: 'slow-commit', timeout: '30s' },
    expect: {
      manual: parks([/^outcome unknown after dispatch: heartbeat timeout/], ['retry'], {
        state: 'succeeded',
        effects: 1,
        runs: 2,
      }),
    },
  },
];

export function cellsOf(rows: Row[]): Cell[] {
  const cells: Cell[] = [];
  for (const row of rows) {
    for (const peer of row.peers) {
      for (const policy of ['manual', 'idempotent', 'reconcile'] as const) {
        const expect = row.expect[`${peer}:${policy}`] ?? row.expect[policy];
        if (!expect || (peer === 'smtp' && policy === 'idempotent')) continue;
        cells.push({
          id: `${row.row}${row.variant ? ` (${row.variant})` : ''} ${peer} ${policy}`,
          row,
          peer,
          policy,
          expect,
        });
      }
    }
  }
  return cells;
}

export const pointFor = (plan: Plan, policy: Policy): FaultPoint | undefined =>
  typeof plan.point === 'object'
    ? policy === 'idempotent'
      ? plan.point.idempotent
      : plan.point.protected
    : plan.point;

/** Cells whose histories are kept as replay fixtures (OPENWORKER_RECORD_HISTORIES=1): every policy, every recovery path. */
export const RECORDED: ReadonlySet<string> = new Set([
  'F3 http manual', // park → retry → second run
  'F4 http idempotent', // automatic retry, same key, stored answer
  'F4 http reconcile', // reconcile: applied
  'F5 smtp manual', // park → succeeded
  'F7 http reconcile', // reconcile: still in flight → park → retry
  'F8 http idempotent', // stored failure replayed → park
  'F9 http manual', // two parks: retry refused past the key retention
  'F10 http reconcile', // lookup for another payment → park → failed
  'F12 (reset) http manual',
  'F12 (workflow-retry) http manual',
  'H (conflicting-recovers) http manual',
  'H (cancel-parked) http manual',
]);

export const fixtureName = (cellId: string): string =>
  `matrix-${cellId
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')}`;
