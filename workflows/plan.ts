import type { PlannedCall } from './types';

/**
 * Makes the tool call ids of one model response usable as ledger keys:
 * - an id repeated within the response: the first occurrence stays (marked invalid: none of them
 *   runs, the model gets one error result) and the repeats are dropped;
 * - an id already used in an earlier iteration of the turn (some providers count from 0 on every
 *   response): renamed to `<id>#<iteration>`, deterministically, so its execution ID stays unique.
 */
export function assignCallIds(calls: readonly PlannedCall[], earlierIds: ReadonlySet<string>, iteration: number): PlannedCall[] {
  const counts = new Map<string, number>();
  for (const c of calls) counts.set(c.toolCallId, (counts.get(c.toolCallId) ?? 0) + 1);
  const out: PlannedCall[] = [];
  const kept = new Set<string>();
  for (const c of calls) {
    if (kept.has(c.toolCallId)) continue;
    kept.add(c.toolCallId);
    const n = counts.get(c.toolCallId)!;
    const id = earlierIds.has(c.toolCallId) ? `${c.toolCallId}#${iteration}` : c.toolCallId;
    const renamed = id === c.toolCallId ? c : { ...c, toolCallId: id };
    out.push(n > 1 ? { ...renamed, invalid: `tool call id '${c.toolCallId}' appears ${n} times in one response; none of them was executed` } : renamed);
  }
  return out;
}
