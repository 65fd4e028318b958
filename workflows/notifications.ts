import { questionOf } from './answers';
import type { LedgerEntry, ParkNotice, TurnInput } from './types';

// Notifications about parked calls: a call that waits for approval, asks a question or sits in
// recovery_required owes one notification per park. The turn schedules one notify activity per park
// itself (workflows/notifyParks.ts) when its calls were planned with `notify`. Rules here are pure.

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
