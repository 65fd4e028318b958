import type { PlannedCall } from './types';

/**
 * Makes the tool call ids of one model response usable as ledger keys:
 * - an id repeated within the response: the first occurrence stays (marked invalid: none of them
 *   runs, the model gets one error result) and the repeats are dropped;
 * - an id already used in an earlier iteration of the turn (some providers count from 0 on every
 *   response): renamed to `<id>#<iteration>` (with a further `.k` if even that is taken),
 *   deterministically, so no two calls of a turn ever share an execution ID.
 */
export function assignCallIds(
  calls: readonly PlannedCall[],
  earlierIds: ReadonlySet<string>,
  iteration: number,
): PlannedCall[] {
  const counts = new Map<string, number>();
  for (const c of calls) counts.set(c.toolCallId, (counts.get(c.toolCallId) ?? 0) + 1);
  const taken = new Set([...earlierIds, ...counts.keys()]);
  const out: PlannedCall[] = [];
  const seen = new Set<string>();
  for (const c of calls) {
    if (seen.has(c.toolCallId)) continue;
    seen.add(c.toolCallId);
    let id = c.toolCallId;
    if (earlierIds.has(id)) {
      id = `${c.toolCallId}#${iteration}`;
      for (let k = 2; taken.has(id); k++) id = `${c.toolCallId}#${iteration}.${k}`;
      taken.add(id);
    }
    const renamed = id === c.toolCallId ? c : { ...c, toolCallId: id };
    const n = counts.get(c.toolCallId)!;
    out.push(
      n > 1
        ? {
            ...renamed,
            invalid: `tool call id '${c.toolCallId}' appears ${n} times in one response; none of them was executed`,
          }
        : renamed,
    );
  }
  return out;
}
