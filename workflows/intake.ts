import { createDecisionAudit } from './audit';
import type { Decision } from './decisions';
import { judgeDecision, parseDecision, splitDecisions } from './decisions';
import type { LedgerInput } from './ledger';
import { authorizeDecision } from './signatures';
import type { CallState, DecisionKind, DecisionRecord, LedgerEntry, RecoverSignal } from './types';

/** Call states with an activity outstanding: their next state comes from an activity result. */
const IN_FLIGHT: readonly CallState[] = ['running', 'dispatched', 'reconciling'];

export interface IntakeDeps {
  ledger: ReadonlyMap<string, LedgerEntry>;
  /** Accepted recovery decisions, consumed by the call's lifecycle. */
  recoveries: Map<string, RecoverSignal>;
  /** The audit of the decisions received, applied or ignored (bounded: workflows/audit.ts). */
  decisions: DecisionRecord[];
  record(toolCallId: string, change: LedgerInput): unknown;
  publish(): void;
  now(): string;
  /** Whether an oversized recovery result is refused (patched() in the turn). */
  resultLimitApplies?: () => boolean;
  /** Whether a decision under a reserved name is refused (patched() in the turn). */
  namesReserved?: () => boolean;
  /** The turn was asked to cancel: nothing a decision asks for will run any more. */
  cancelled?: () => boolean;
}

export const NOT_APPLIED_CANCELLED = 'not applied: the turn is cancelled';

/**
 * Where approve / reject / recover signals land in a turn. A decision is judged only when its
 * verdict can no longer depend on how the server batched events into workflow tasks (a replay may
 * deliver a signal together with, and so before, an activity result that a live run processed
 * first): a recover for a call whose activity is in flight waits until the call settles, and a
 * decision naming a call that a pending model response may create waits for that response.
 */
export function createDecisionIntake(deps: IntakeDeps) {
  const { ledger, recoveries, decisions, record, publish, now } = deps;
  const audit = createDecisionAudit(decisions);
  // Pending from the start: decisions that arrive with the turn's first task (a reset re-applies
  // its signals there) wait for the calls of the first model response.
  let modelPending = true;
  const waitingForCall: { d: Decision; at: string }[] = [];
  const waitingForSettle = new Map<string, { d: Decision; at: string }[]>();

  // Signatures accepted in this turn: each authorises one decision.
  const usedSignatures = new Set<string>();

  const judge = (d: Decision, at: string): void => {
    const { toolCallId, by, decisionId } = d.payload;
    const entry = ledger.get(toolCallId);
    const verdict: ReturnType<typeof judgeDecision> =
      deps.cancelled?.() && entry
        ? { ok: false, why: NOT_APPLIED_CANCELLED }
        : judgeDecision(entry, d, recoveries.has(toolCallId));
    const auth =
      verdict.ok && entry
        ? authorizeDecision(entry.approval, entry, { kind: d.kind, ...d.payload }, Date.parse(at), usedSignatures)
        : undefined;
    const why = !verdict.ok ? verdict.why : auth && !auth.ok ? auth.why : undefined;
    const signer = auth?.ok ? auth.signer : undefined;
    audit.add({
      at,
      kind: d.kind,
      toolCallId,
      by,
      ...(decisionId ? { decisionId } : {}),
      ...(why === undefined ? { outcome: 'applied' } : { outcome: 'ignored', why }),
      ...(signer ? { signedBy: signer.keyId } : {}),
    });
    if (why !== undefined) {
      // A decision refused for its signature or the policy is part of the call's story.
      if (auth && !auth.ok) record(toolCallId, { type: 'decision_refused', kind: d.kind, by, why });
      else publish();
      return;
    }
    if (signer && d.payload.signature) usedSignatures.add(d.payload.signature.value);
    const signed = signer ? { signed: { keyId: signer.keyId, signedAt: signer.signedAt } } : {};
    if (d.kind === 'approve') record(toolCallId, { type: 'approved', by, ...signed });
    else if (d.kind === 'reject')
      record(toolCallId, { type: 'rejected', by, ...(d.payload.reason ? { reason: d.payload.reason } : {}) });
    else {
      recoveries.set(toolCallId, d.payload);
      record(toolCallId, {
        type: 'recovery_decided',
        decision: d.payload.decision,
        by,
        ...(d.payload.reason ? { reason: d.payload.reason } : {}),
        ...signed,
        ...(d.payload.skipFence ? { skipFence: true } : {}),
      });
    }
  };

  const judgeWaiting = (toolCallId: string): void => {
    const waiting = waitingForSettle.get(toolCallId) ?? [];
    waitingForSettle.delete(toolCallId);
    for (const w of waiting) judge(w.d, w.at);
  };

  /** The signal handler: never throws, whatever the payload. */
  const decide = (kind: DecisionKind, raw: unknown): void => {
    const at = now();
    const parsed = parseDecision(kind, raw, deps.resultLimitApplies, deps.namesReserved);
    if (!parsed.ok) {
      const { why, toolCallId, by, decisionId } = parsed;
      audit.add({
        at,
        kind,
        ...(toolCallId ? { toolCallId } : {}),
        ...(by ? { by } : {}),
        ...(decisionId ? { decisionId } : {}),
        outcome: 'ignored',
        why,
      });
      publish();
      return;
    }
    const d = parsed.decision;
    const entry = ledger.get(d.payload.toolCallId);
    if (!entry && modelPending) waitingForCall.push({ d, at });
    else if (entry && d.kind === 'recover' && IN_FLIGHT.includes(entry.state)) {
      waitingForSettle.set(entry.toolCallId, [...(waitingForSettle.get(entry.toolCallId) ?? []), { d, at }]);
    } else judge(d, at);
  };

  return {
    decide,
    /** The `decisions` signal: each item as if it came alone, in order; a malformed batch is recorded once. */
    decideMany(raw: unknown): void {
      const batch = splitDecisions(raw);
      if (batch.ok) {
        for (const item of batch.items) decide(item.kind, item.payload);
        return;
      }
      audit.add({ at: now(), kind: 'decisions', outcome: 'ignored', why: batch.why });
      publish();
    },
    modelPending(pending: boolean): void {
      modelPending = pending;
    },
    /** After the calls of a model response are in the ledger. */
    callsCreated(): void {
      for (const w of waitingForCall.splice(0)) judge(w.d, w.at);
    },
    /** After a call reaches recovery_required or a terminal state: judge the decisions that waited for it. */
    judgeWaiting,
    /** An applied decision (a recovery by default) that the turn could not act on, being cancelled first: audited as such. */
    notApplied(toolCallId: string, why: string, kind: DecisionKind = 'recover'): void {
      const applied = [...decisions]
        .reverse()
        .find((r) => r.kind === kind && r.toolCallId === toolCallId && r.outcome === 'applied');
      if (applied) Object.assign(applied, { outcome: 'ignored', why });
      recoveries.delete(toolCallId);
      publish();
    },
    /** When the turn ends: whatever still waits is judged against the final ledger. */
    flush(): void {
      for (const w of waitingForCall.splice(0)) judge(w.d, w.at);
      for (const id of [...waitingForSettle.keys()]) judgeWaiting(id);
    },
  };
}
