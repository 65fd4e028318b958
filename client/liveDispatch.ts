import type { temporal } from '@temporalio/proto';
import type { LoadedDataConverter } from '@temporalio/common';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import { activityIdFor } from '../workflows/ledger';
import type { LedgerEntry, ToolHeartbeat } from '../workflows/types';

// A protected call records its dispatch marker as an awaited heartbeat: the
// server holds it with the running attempt, and the turn learns it only from the attempt's outcome.
// Until then the turn's own ledger says `running`. Readers of a live turn (show, the approvals page,
// chat) take the marker from the pending activity, so what they show is true while the tool runs.

/** A pending activity's ID and its last heartbeat, decoded. */
export interface PendingBeat {
  activityId: string;
  heartbeat: unknown;
  /** When the server recorded that heartbeat (ISO). */
  at?: string;
}

const isMarker = (h: unknown): h is ToolHeartbeat & { dispatched: true } =>
  typeof h === 'object' && h !== null && (h as ToolHeartbeat).dispatched === true;

/**
 * The ledger as it is now: a `running` call whose current attempt's pending activity carries the
 * dispatch marker is `dispatched`, with a `dispatched` event marked `source: 'heartbeat'` (the turn
 * records its own when the attempt reports). Everything else is returned unchanged.
 */
export function withHeartbeatMarkers(ledger: readonly LedgerEntry[], pending: readonly PendingBeat[]): LedgerEntry[] {
  return ledger.map((e) => {
    if (e.state !== 'running' || e.runs === 0 || e.dispatched) return e;
    const beat = pending.find((p) => p.activityId === activityIdFor(e.executionId, e.runs));
    if (!beat || !isMarker(beat.heartbeat)) return e;
    const { attempt } = beat.heartbeat;
    return {
      ...e,
      state: 'dispatched',
      dispatched: true,
      attempts: Math.max(e.attempts, attempt),
      events: [
        ...e.events,
        {
          at: beat.at ?? '',
          type: 'dispatched',
          activityId: beat.activityId,
          attempt,
          source: 'heartbeat',
        },
      ],
    };
  });
}

type PendingActivity = temporal.api.workflow.v1.IPendingActivityInfo;

/** The pending activities of a described turn with their last heartbeat, decoded like any payload. */
export async function pendingBeats(
  converter: LoadedDataConverter,
  pending: readonly PendingActivity[] | null | undefined,
): Promise<PendingBeat[]> {
  const out: PendingBeat[] = [];
  for (const p of pending ?? []) {
    if (!p.activityId || !p.heartbeatDetails?.payloads?.length) continue;
    // A heartbeat this client cannot decode (another key) shows the turn's own ledger, not an error.
    const [heartbeat] = await decodeArrayFromPayloads(converter, p.heartbeatDetails.payloads).catch(() => []);
    const t = p.lastHeartbeatTime;
    out.push({
      activityId: p.activityId,
      heartbeat,
      ...(t?.seconds != null
        ? { at: new Date(Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6)).toISOString() }
        : {}),
    });
  }
  return out;
}
