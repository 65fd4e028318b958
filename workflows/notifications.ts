import { setHandler } from '@temporalio/workflow';
import { notifiedSignal, notifyUpdate } from './definitions';
import type { LedgerInput } from './ledger';
import { checkPayload, DESCRIPTIONS, schemas } from './protocol';
import { questionOf } from './answers';
import type { LedgerEntry, NotifiedReport, NotifyClaim, ParkNotice, TurnInput } from './types';

// Notifications about parked calls: a call that waits for approval, asks a question or sits in
// recovery_required owes one notification per park. Since `notify-activity-v1` the turn schedules
// one notify activity per park itself (workflows/notifyParks.ts) when its calls were planned with
// `notify`. Before, a notifier polled the inbox, claimed a park with the `notify` update (a lease) and
// reported with `notified`; those handlers stay for turns and clients of older builds.
// Rules here are pure; the handlers only read the ledger and record.

export const MAX_CLAIMS_PER_PARK = 5;
export const MAX_LEASE_MS = 10 * 60_000;

/** Which park a notification is about: `approval`, `question` (ask_user), or `recovery-<n>` for the n-th time in recovery_required. */
export function parkKeyOf(e: LedgerEntry): string | undefined {
  if (e.state === 'awaiting_approval') return 'approval';
  if (e.state === 'awaiting_answer') return 'question';
  if (e.state !== 'recovery_required') return undefined;
  return `recovery-${e.events.filter((ev) => ev.type === 'recovery_required').length}`;
}

/** The key receivers deduplicate a park's message by (the `Idempotency-Key` header). */
export const notificationKey = (executionId: string, park: string): string => `${executionId}:${park}`;

/**
 * The parks that need a notify activity now: calls planned with `notify` (`watched`, by tool call
 * id) at a park whose key is not in `started` yet, in ledger order.
 */
export function newParks(
  entries: readonly LedgerEntry[],
  watched: ReadonlySet<string>,
  started: ReadonlySet<string>,
): { entry: LedgerEntry; park: string }[] {
  const due: { entry: LedgerEntry; park: string }[] = [];
  for (const entry of entries) {
    if (!watched.has(entry.toolCallId)) continue;
    const park = parkKeyOf(entry);
    if (park && !started.has(notificationKey(entry.executionId, park))) due.push({ entry, park });
  }
  return due;
}

/** What the notify activity of `park` carries: the facts of the call at that park, never its arguments. */
export function parkNotice(turn: Pick<TurnInput, 'sessionId' | 'turn'>, e: LedgerEntry, park: string): ParkNotice {
  const state = e.state as ParkNotice['state'];
  // When the park began: the entry's first event for approval and question, its latest park otherwise.
  const began =
    state === 'recovery_required' ? [...e.events].reverse().find((ev) => ev.type === 'recovery_required') : e.events[0];
  return {
    sessionId: turn.sessionId,
    turn: turn.turn,
    toolCallId: e.toolCallId,
    executionId: e.executionId,
    tool: e.tool,
    ...(e.target !== undefined ? { target: e.target } : {}),
    state,
    ...(state === 'recovery_required' && typeof began?.reason === 'string' ? { reason: began.reason } : {}),
    ...(state === 'awaiting_answer' ? { question: questionOf(e.arguments).question } : {}),
    argsDigest: e.argsDigest,
    since: began?.at ?? '',
    park,
  };
}

export interface NotificationState {
  park?: string;
  notified: boolean;
  claims: number;
  /** A claim that has not expired: who holds it, until when. */
  claimedBy?: string;
  claimedUntil?: string;
}

export function notificationState(e: LedgerEntry, nowMs: number): NotificationState {
  const park = parkKeyOf(e);
  const mine = e.events.filter((ev) => ev.park === park);
  const claims = mine.filter((ev) => ev.type === 'notification_claimed');
  const last = claims.at(-1);
  const live = last && Date.parse(String(last.until)) > nowMs ? last : undefined;
  return {
    ...(park ? { park } : {}),
    notified: mine.some((ev) => ev.type === 'notified'),
    claims: claims.length,
    ...(live ? { claimedBy: String(live.by), claimedUntil: String(live.until) } : {}),
  };
}

/** Why a claim cannot be had now, or undefined when it can. */
export function refuseClaim(e: LedgerEntry | undefined, c: NotifyClaim, nowMs: number): string | undefined {
  if (!e) return `unknown execution ${c.executionId}`;
  const s = notificationState(e, nowMs);
  if (s.park !== c.park) return `the call is not at park '${c.park}' (now ${s.park ?? e.state})`;
  if (s.notified) return `park '${c.park}' was notified already`;
  if (s.claimedBy) return `claimed by ${s.claimedBy} until ${s.claimedUntil}`;
  if (s.claims >= MAX_CLAIMS_PER_PARK) return `${s.claims} claims for park '${c.park}' without a delivery; given up`;
  return undefined;
}

export function handleNotifications(deps: {
  entries: () => LedgerEntry[];
  record: (toolCallId: string, change: LedgerInput) => LedgerEntry;
  /** The turn schedules this park's notify activity itself: a polling notifier of an older build is refused. */
  notifiesItself?: (executionId: string, park: string) => boolean;
}): void {
  const find = (executionId: string) => deps.entries().find((e) => e.executionId === executionId);
  setHandler(
    notifyUpdate,
    (c) => {
      const e = find(c.executionId)!;
      const until = new Date(Date.now() + Math.min(c.leaseMs, MAX_LEASE_MS)).toISOString();
      deps.record(e.toolCallId, { type: 'notification_claimed', park: c.park, by: c.by, until });
      return { until };
    },
    {
      // A refused claim leaves no trace in history: notifiers may ask as often as they poll.
      validator: (c) => {
        const checked = checkPayload(schemas().notify, c);
        if (!checked.ok) throw new Error(checked.why);
        const why = deps.notifiesItself?.(c.executionId, c.park)
          ? `the turn notifies park '${c.park}' itself (notify activity)`
          : refuseClaim(find(c.executionId), c, Date.now());
        if (why) throw new Error(`notify: ${why}`);
      },
      description: DESCRIPTIONS.notify,
    },
  );
  setHandler(
    notifiedSignal,
    (raw) => {
      const n = raw as Partial<NotifiedReport>;
      const e = typeof n?.executionId === 'string' ? find(n.executionId) : undefined;
      // Only the report of a claim counts; anything else is dropped (a signal cannot be refused).
      const claimed = e?.events.some(
        (ev) => ev.type === 'notification_claimed' && ev.park === n.park && ev.by === n.by,
      );
      if (!e || !claimed || e.events.some((ev) => ev.type === 'notified' && ev.park === n.park)) return;
      deps.record(e.toolCallId, {
        type: 'notified',
        park: String(n.park),
        by: String(n.by),
        delivered: Number(n.delivered) || 0,
        failed: Number(n.failed) || 0,
      });
    },
    {
      description: DESCRIPTIONS.notified,
    },
  );
}
