import { needsNoApproval, refusedBy } from './deciders';
import { utf8Bytes } from './limits';
import { checkPayload, DECISION_KINDS, MAX_BATCH, passes, schemas } from './protocol';
import type { ApproveSignal, DecisionKind, LedgerEntry, RecoverSignal, RejectSignal } from './types';

// Whether an approve / reject / recover signal takes effect. Pure; a decision that does not take
// effect changes nothing and is recorded with the reason.

export type Decision =
  | { kind: 'approve'; payload: ApproveSignal }
  | { kind: 'reject'; payload: RejectSignal }
  | { kind: 'recover'; payload: RecoverSignal };

export type Parsed =
  { ok: true; decision: Decision } | { ok: false; why: string; toolCallId?: string; by?: string; decisionId?: string };

/** A result a person supplies with `recover succeeded`; as large as a tool's result may be by default. */
export const MAX_RECOVERY_RESULT_BYTES = 256 * 1024;

const S = schemas();

/** The well-formed ones of a decision's (or an answer's) naming fields, for the record of a refused one. */
export const idsOf = (p: Record<string, unknown>) => {
  const ok = (f: keyof typeof S.decisionIds) => (passes(S.decisionIds[f], p[f]) ? { [f]: p[f] as string } : {});
  return { ...ok('toolCallId'), ...ok('by'), ...ok('decisionId') };
};

/**
 * Validates a raw signal payload (it may come from any Temporal client, so trust nothing) against
 * its schema (workflows/protocol.ts): the first field that fails, in the schema's order, is the
 * reason. A name the system reserves (workflows/deciders.ts) is refused once toolCallId and by are
 * well-formed.
 */
export function parseDecision(kind: DecisionKind, raw: unknown): Parsed {
  const checked = checkPayload(S[kind], raw);
  if (!checked.ok && checked.field === undefined) return { ok: false, why: `malformed ${kind}: ${checked.why}` };
  const p = raw as Record<string, unknown>;
  const ids = idsOf(p);
  const bad = (why: string): Parsed => ({ ok: false, why: `malformed ${kind}: ${why}`, ...ids });
  if (!checked.ok && (checked.field === 'toolCallId' || checked.field === 'by')) return bad(checked.why);
  const refused = refusedBy(kind, p.by as string);
  if (refused) return { ok: false, why: refused, ...ids };
  if (!checked.ok) return bad(checked.why);
  // The fields of all three kinds; each kind's schema has checked the ones it has.
  const v = checked.value as Partial<RecoverSignal & ApproveSignal> & Pick<RecoverSignal, 'toolCallId' | 'by'>;
  const common = {
    toolCallId: v.toolCallId,
    by: v.by,
    ...(v.decisionId ? { decisionId: v.decisionId } : {}),
    ...(v.executionId ? { executionId: v.executionId } : {}),
    ...(v.signature ? { signature: v.signature } : {}),
  };
  const reason = v.reason ? { reason: v.reason } : {};
  switch (kind) {
    case 'approve':
      return {
        ok: true,
        decision: {
          kind,
          payload: {
            ...common,
            ...(v.argsDigest ? { argsDigest: v.argsDigest } : {}),
            ...(v.arguments ? { arguments: v.arguments } : {}),
          },
        },
      };
    case 'reject':
      return { ok: true, decision: { kind, payload: { ...common, ...reason } } };
    case 'recover': {
      const decision = v.decision!;
      if (v.skipFence === true && decision !== 'retry') return bad('skipFence only goes with decision retry');
      if ('result' in p) {
        const bytes = utf8Bytes(JSON.stringify(p.result) ?? '');
        if (bytes > MAX_RECOVERY_RESULT_BYTES)
          return bad(
            `result is ${bytes} bytes; at most ${MAX_RECOVERY_RESULT_BYTES}: give a summary, or where to find the rest`,
          );
      }
      return {
        ok: true,
        decision: {
          kind,
          payload: {
            ...common,
            ...reason,
            decision,
            ...('result' in p ? { result: p.result } : {}),
            ...(v.run !== undefined ? { run: v.run } : {}),
            ...(v.park !== undefined ? { park: v.park } : {}),
            ...(v.skipFence === true ? { skipFence: true } : {}),
          },
        },
      };
    }
  }
}

export { MAX_BATCH };

export type Batch = { ok: true; items: { kind: DecisionKind; payload: unknown }[] } | { ok: false; why: string };

/**
 * Splits a `decisions` signal, `{ decisions: [{ kind, ...payload }] }`, into single decisions, each
 * then parsed and judged exactly as its own signal would be. One signal means one history event
 * and one workflow task for all the calls of a response.
 */
export function splitDecisions(raw: unknown): Batch {
  const envelope = checkPayload(S.decisionsEnvelope, raw);
  if (!envelope.ok) return { ok: false, why: `malformed decisions: ${envelope.why}` };
  const items: { kind: DecisionKind; payload: unknown }[] = [];
  for (const [i, d] of envelope.value.decisions.entries()) {
    const kind = d && typeof d === 'object' ? (d as Record<string, unknown>).kind : undefined;
    if (!passes(S.decisionKind, kind))
      return {
        ok: false,
        why: `malformed decisions: item ${i + 1} has kind ${JSON.stringify(kind) ?? 'undefined'}; use one of ${DECISION_KINDS.join(', ')}`,
      };
    items.push({ kind: kind as DecisionKind, payload: d });
  }
  return { ok: true, items };
}

export type Verdict = { ok: true } | { ok: false; why: string };

/**
 * @param recoveryPending a recovery decision for this call was accepted and is being applied
 */
export function judgeDecision(entry: LedgerEntry | undefined, decision: Decision, recoveryPending = false): Verdict {
  const id = decision.payload.toolCallId;
  if (!entry) return { ok: false, why: `unknown tool call '${id}': no such call in this turn` };
  const no = (why: string): Verdict => ({ ok: false, why });
  if (entry.state === 'invalid') return no(`call '${id}' is invalid and will not run: ${entry.error ?? ''}`.trim());
  const bound = decision.payload.executionId;
  if (bound && bound !== entry.executionId) {
    return no(`stale: decided for execution ${bound}, but '${id}' in this turn is execution ${entry.executionId}`);
  }
  switch (decision.kind) {
    case 'approve':
      if (entry.state === 'awaiting_approval') {
        const digest = decision.payload.argsDigest;
        if (digest && digest !== entry.argsDigest) {
          return no(`argsDigest does not match the arguments awaiting approval (${entry.argsDigest})`);
        }
        return { ok: true };
      }
      if (entry.state === 'rejected')
        return no(`conflicting: call '${id}' was already rejected by ${entry.rejectedBy}`);
      if (needsNoApproval(entry)) return no(`late: call '${id}' needs no approval (state ${entry.state})`);
      return no(`duplicate: call '${id}' was already approved by ${entry.approvedBy} (state ${entry.state})`);
    case 'reject':
      if (entry.state === 'awaiting_approval') return { ok: true };
      if (entry.state === 'rejected') return no(`duplicate: call '${id}' was already rejected by ${entry.rejectedBy}`);
      if (needsNoApproval(entry)) return no(`late: call '${id}' needs no approval (state ${entry.state})`);
      return no(`conflicting: call '${id}' was already approved by ${entry.approvedBy} (state ${entry.state})`);
    case 'recover':
      if (entry.state !== 'recovery_required') return no(`late: call '${id}' is ${entry.state}, not recovery_required`);
      if (recoveryPending) return no(`duplicate: a recovery decision for '${id}' is already being applied`);
      if (decision.payload.run !== undefined && decision.payload.run !== entry.runs) {
        return no(
          `late: decided for run ${decision.payload.run}, but '${id}' has been re-run since (run ${entry.runs})`,
        );
      }
      // A decision answers the park its sender saw, never one that happened after it was sent.
      if (decision.payload.park !== undefined) {
        const parks = entry.events.filter((e) => e.type === 'recovery_required').length;
        if (decision.payload.park !== parks)
          return no(
            `stale: decided for park ${decision.payload.park}, but '${id}' is at park ${parks}; look again and decide anew`,
          );
      }
      return { ok: true };
  }
}
