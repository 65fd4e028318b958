import { judgeAnswer, parseAnswer } from './answers';
import { createDecisionAudit } from './audit';
import type { Decision } from './decisions';
import { judgeDecision, parseDecision, splitDecisions } from './decisions';
import type { EditCheck, PendingEdit } from './edits';
import { editOf, editProblem } from './edits';
import type { LedgerInput } from './ledger';
import { authorizeDecision } from './signatures';
import type { AnswerSignal, CallState, DecisionKind, DecisionRecord, LedgerEntry, RecoverSignal } from './types';

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
  // Answers naming a call a pending model response may create (as decisions above).
  const answersForCall: { a: AnswerSignal; at: string }[] = [];
  const waitingForSettle = new Map<string, { d: Decision; at: string }[]>();

  // Signatures accepted in this turn: each authorises one decision.
  const usedSignatures = new Set<string>();
  // Approvals with edits while the worker checks their arguments (workflows/edits.ts), and the
  // decisions for those calls that arrived meanwhile: judged after it, as if it had applied at once.
  const edits = new Map<string, { d: Decision & { kind: 'approve' }; at: string; edit: PendingEdit }>();
  const waitingForEdit = new Map<string, { d: Decision; at: string }[]>();

  const judge = (d: Decision, at: string): void => {
    const { toolCallId, by, decisionId } = d.payload;
    const entry = ledger.get(toolCallId);
    const verdict: ReturnType<typeof judgeDecision> =
      deps.cancelled?.() && entry
        ? { ok: false, why: NOT_APPLIED_CANCELLED }
        : judgeDecision(entry, d, recoveries.has(toolCallId));
    // An edit is signed over its new arguments' digest.
    const edit = verdict.ok && entry && d.kind === 'approve' ? editOf(entry, d.payload) : undefined;
    const signedOver = entry && edit ? { ...entry, argsDigest: edit.digest } : entry;
    const auth =
      verdict.ok && signedOver
        ? authorizeDecision(entry!.approval, signedOver, { kind: d.kind, ...d.payload }, Date.parse(at), usedSignatures)
        : undefined;
    if (edit && auth?.ok && d.kind === 'approve') {
      edits.set(toolCallId, { d, at, edit: { by, ...edit } });
      publish();
      return;
    }
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

  /** The worker checked an edit's arguments: it applies (edited, then approved) or is refused, and the call still waits. */
  const editChecked = (toolCallId: string, check: EditCheck): void => {
    const pending = edits.get(toolCallId);
    const entry = ledger.get(toolCallId);
    if (!pending || !entry) return;
    edits.delete(toolCallId);
    const { d, at, edit } = pending;
    const { by, decisionId } = d.payload;
    const plan = 'plan' in check ? check.plan : undefined;
    // The edited call's own approvers (its target may have changed) must accept the signature too.
    const edited = { ...entry, argsDigest: edit.digest, target: plan ? plan.target : entry.target };
    const auth = authorizeDecision(
      plan?.approval ?? entry.approval,
      edited,
      { kind: 'approve', ...d.payload },
      Date.parse(at),
      usedSignatures,
    );
    // Judged again: a grant may have approved the call, or a cancel come, while the worker checked.
    const now = deps.cancelled?.() ? { ok: false as const, why: NOT_APPLIED_CANCELLED } : judgeDecision(entry, d);
    const why = (now.ok ? undefined : now.why) ?? editProblem(entry, check) ?? (auth.ok ? undefined : auth.why);
    const signer = auth.ok ? auth.signer : undefined;
    audit.add({
      at,
      kind: 'approve',
      toolCallId,
      by,
      ...(decisionId ? { decisionId } : {}),
      ...(why === undefined ? { outcome: 'applied' } : { outcome: 'ignored', why }),
      ...(signer ? { signedBy: signer.keyId } : {}),
    });
    if (!now.ok) publish();
    else if (why !== undefined) record(toolCallId, { type: 'decision_refused', kind: 'approve', by, why });
    else {
      if (signer && d.payload.signature) usedSignatures.add(d.payload.signature.value);
      record(toolCallId, {
        type: 'edited',
        by,
        from: entry.argsDigest,
        to: edit.digest,
        arguments: edit.arguments,
        ...(plan?.target !== undefined ? { target: plan.target } : {}),
      });
      const signed = signer ? { signed: { keyId: signer.keyId, signedAt: signer.signedAt } } : {};
      record(toolCallId, { type: 'approved', by, ...signed });
    }
    const waiting = waitingForEdit.get(toolCallId) ?? [];
    waitingForEdit.delete(toolCallId);
    for (const w of waiting) judge(w.d, w.at);
  };

  const judgeWaiting = (toolCallId: string): void => {
    const waiting = waitingForSettle.get(toolCallId) ?? [];
    waitingForSettle.delete(toolCallId);
    for (const w of waiting) judge(w.d, w.at);
  };

  // ask_user (workflows/answers.ts): an applied answer is the call's result; any other is audited with why.
  const applyAnswer = (a: AnswerSignal, at: string): void => {
    const entry = ledger.get(a.toolCallId);
    const verdict =
      deps.cancelled?.() && entry
        ? { ok: false as const, why: NOT_APPLIED_CANCELLED }
        : judgeAnswer(entry, a, Date.parse(at));
    const { toolCallId, by, decisionId } = a;
    audit.add({
      at,
      kind: 'answer',
      toolCallId,
      by,
      ...(decisionId ? { decisionId } : {}),
      ...(verdict.ok ? { outcome: 'applied' } : { outcome: 'ignored', why: verdict.why }),
    });
    if (verdict.ok)
      record(toolCallId, { type: 'answered', by, answer: verdict.answer, ...(decisionId ? { decisionId } : {}) });
    else publish();
  };

  /** The `answer` signal's handler: never throws, whatever the payload. */
  const answer = (raw: unknown): void => {
    const at = now();
    const parsed = parseAnswer(raw);
    if (!parsed.ok) {
      const { why, toolCallId, by, decisionId } = parsed;
      audit.add({
        at,
        kind: 'answer',
        ...(toolCallId ? { toolCallId } : {}),
        ...(by ? { by } : {}),
        ...(decisionId ? { decisionId } : {}),
        outcome: 'ignored',
        why,
      });
      publish();
      return;
    }
    if (!ledger.get(parsed.answer.toolCallId) && modelPending) answersForCall.push({ a: parsed.answer, at });
    else applyAnswer(parsed.answer, at);
  };

  /** The signal handler: never throws, whatever the payload. */
  const decide = (kind: DecisionKind, raw: unknown): void => {
    const at = now();
    const parsed = parseDecision(kind, raw);
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
    if (entry && edits.has(entry.toolCallId))
      waitingForEdit.set(entry.toolCallId, [...(waitingForEdit.get(entry.toolCallId) ?? []), { d, at }]);
    else if (!entry && modelPending) waitingForCall.push({ d, at });
    else if (entry && d.kind === 'recover' && IN_FLIGHT.includes(entry.state)) {
      waitingForSettle.set(entry.toolCallId, [...(waitingForSettle.get(entry.toolCallId) ?? []), { d, at }]);
    } else judge(d, at);
  };

  return {
    decide,
    answer,
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
      for (const w of answersForCall.splice(0)) applyAnswer(w.a, w.at);
    },
    /** After a call reaches recovery_required or a terminal state: judge the decisions that waited for it. */
    judgeWaiting,
    /** The approve-with-edits waiting for the worker to check its arguments (workflows/edits.ts). */
    editPending: (toolCallId: string): PendingEdit | undefined => edits.get(toolCallId)?.edit,
    editChecked,
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
      for (const id of [...edits.keys()])
        editChecked(id, { refused: 'not applied: the turn ended before the edited arguments were checked' });
      for (const w of waitingForCall.splice(0)) judge(w.d, w.at);
      for (const w of answersForCall.splice(0)) applyAnswer(w.a, w.at);
      for (const id of [...waitingForSettle.keys()]) judgeWaiting(id);
    },
  };
}
