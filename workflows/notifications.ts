import { setHandler } from '@temporalio/workflow';
import { notifiedSignal, notifyUpdate } from './definitions';
import type { LedgerInput } from './ledger';
import { checkPayload, DESCRIPTIONS, schemas } from './protocol';
import type { LedgerEntry, NotifiedReport, NotifyClaim } from './types';

// Notifications about parked calls, owed by the turn's own state: a call that waits for approval or
// sits in recovery_required owes one notification per park. A notifier (any replica of the
// approvals app) claims it with the `notify` update, sends it, and reports with `notified`. The claim
// is a lease: a notifier that dies after claiming leaves a claim that expires, and another sends it.
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
        const why = refuseClaim(find(c.executionId), c, Date.now());
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
