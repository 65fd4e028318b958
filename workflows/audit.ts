import type { DecisionRecord } from './types';

/** Decisions not applied that a turn keeps in its audit; older ones are only counted. */
export const MAX_NOT_APPLIED_KEPT = 100;

/**
 * A turn's decision audit, bounded: every applied decision is kept (a call takes a few at most),
 * and the latest `max` that were not applied. Older ones are counted in one record at the front,
 * so a flood of signals costs the turn's memory, its status query, its details and its result a
 * constant, and shows once with its count. O(1) per decision but for a scan past the applied ones.
 */
export function createDecisionAudit(decisions: DecisionRecord[], max = MAX_NOT_APPLIED_KEPT) {
  let kept = 0;
  let summary: DecisionRecord | undefined;
  return {
    add(record: DecisionRecord): void {
      decisions.push(record);
      if (record.outcome === 'applied' || ++kept <= max) return;
      const oldest = decisions.findIndex((d) => d !== summary && d.outcome === 'ignored');
      const [dropped] = decisions.splice(oldest, 1);
      kept--;
      const omitted = (summary?.omitted ?? 0) + 1;
      if (!summary) {
        summary = { at: dropped!.at, kind: 'decisions', outcome: 'ignored', omitted };
        decisions.unshift(summary);
      }
      Object.assign(summary, {
        omitted,
        why: `${omitted} more decisions not applied are not kept: more than the limit of ${max} per turn (the latest ${max} are)`,
      });
    },
  };
}

/** How many decisions not applied the audit counted but did not keep. */
export const omittedDecisions = (decisions: readonly DecisionRecord[]): number =>
  decisions.find((d) => d.omitted !== undefined)?.omitted ?? 0;

/** How many decisions the turn received: those kept, and those only counted. */
export const decisionsReceived = (decisions: readonly DecisionRecord[]): number =>
  decisions.filter((d) => d.omitted === undefined).length + omittedDecisions(decisions);
