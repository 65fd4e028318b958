import { needsNoApproval, reservedName } from './deciders';
import { utf8Bytes } from './limits';
import type {
  ApproveSignal,
  DecisionKind,
  DecisionSignature,
  LedgerEntry,
  RecoverSignal,
  RecoveryDecision,
  RejectSignal,
} from './types';

// Whether an approve / reject / recover signal takes effect. Pure; a decision that does not take
// effect changes nothing and is recorded with the reason.

export type Decision =
  | { kind: 'approve'; payload: ApproveSignal }
  | { kind: 'reject'; payload: RejectSignal }
  | { kind: 'recover'; payload: RecoverSignal };

export type Parsed =
  { ok: true; decision: Decision } | { ok: false; why: string; toolCallId?: string; by?: string; decisionId?: string };

const RECOVERY_DECISIONS: readonly RecoveryDecision[] = ['retry', 'succeeded', 'failed'];
const MAX_ID = 256;
const MAX_BY = 200;
const MAX_REASON = 2000;

function str(value: unknown, max: number): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= max ? value : undefined;
}

/** A result a person supplies with `recover succeeded`; as large as a tool's result may be by default. */
export const MAX_RECOVERY_RESULT_BYTES = 256 * 1024;

/**
 * Validates a raw signal payload (it may come from any Temporal client, so trust nothing).
 * `resultLimitApplies` is asked only for an oversized recovery result: histories recorded before the
 * limit took any size, and must replay that way (the turn answers with patched()). `namesReserved`
 * likewise is asked only for a name the system reserves (workflows/deciders.ts): before the refusal,
 * a person could decide under one.
 */
export function parseDecision(
  kind: DecisionKind,
  raw: unknown,
  resultLimitApplies: () => boolean = () => true,
  namesReserved: () => boolean = () => true,
): Parsed {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    return { ok: false, why: `malformed ${kind}: payload must be an object` };
  const p = raw as Record<string, unknown>;
  const toolCallId = str(p.toolCallId, MAX_ID);
  const by = str(p.by, MAX_BY);
  const decisionId = str(p.decisionId, MAX_ID);
  const ids = { ...(toolCallId ? { toolCallId } : {}), ...(by ? { by } : {}), ...(decisionId ? { decisionId } : {}) };
  const bad = (why: string): Parsed => ({ ok: false, why: `malformed ${kind}: ${why}`, ...ids });
  if (!toolCallId) return bad(`toolCallId must be a non-empty string of at most ${MAX_ID} characters`);
  if (!by) return bad(`by must name who decided (1-${MAX_BY} characters)`);
  const reserved = reservedName(by);
  if (reserved && namesReserved()) return { ok: false, why: `refused ${kind}: by ${reserved}`, ...ids };
  if (p.decisionId !== undefined && !decisionId) return bad('decisionId must be a non-empty string');
  if (p.reason !== undefined && (typeof p.reason !== 'string' || p.reason.length > MAX_REASON)) {
    return bad(`reason must be a string of at most ${MAX_REASON} characters`);
  }
  const executionId = str(p.executionId, MAX_ID);
  if (p.executionId !== undefined && !executionId) return bad('executionId must be a non-empty string');
  let signature: DecisionSignature | undefined;
  if (p.signature !== undefined) {
    const sig = p.signature as Record<string, unknown> | null;
    const keyId = str(sig?.keyId, MAX_ID);
    const signedAt = str(sig?.signedAt, 40);
    const value = str(sig?.value, MAX_ID);
    if (!sig || typeof sig !== 'object' || !keyId || !signedAt || !value)
      return bad('signature must be { keyId, signedAt, value } strings (openworker-temporal signs it for you)');
    signature = { keyId, signedAt, value };
  }
  const common = {
    toolCallId,
    by,
    ...(decisionId ? { decisionId } : {}),
    ...(executionId ? { executionId } : {}),
    ...(signature ? { signature } : {}),
  };
  const reason = typeof p.reason === 'string' && p.reason ? { reason: p.reason } : {};
  switch (kind) {
    case 'approve':
      if (p.argsDigest !== undefined && !str(p.argsDigest, MAX_ID))
        return bad('argsDigest must be a string like sha256:<hex>');
      return {
        ok: true,
        decision: { kind, payload: { ...common, ...(p.argsDigest ? { argsDigest: p.argsDigest as string } : {}) } },
      };
    case 'reject':
      return { ok: true, decision: { kind, payload: { ...common, ...reason } } };
    case 'recover':
      if (!RECOVERY_DECISIONS.includes(p.decision as RecoveryDecision))
        return bad(`decision must be one of ${RECOVERY_DECISIONS.join(', ')}`);
      if (p.run !== undefined && !(Number.isInteger(p.run) && (p.run as number) >= 1))
        return bad('run must be a positive integer');
      if (p.park !== undefined && !(Number.isInteger(p.park) && (p.park as number) >= 1))
        return bad('park must be a positive integer');
      if (p.skipFence !== undefined && typeof p.skipFence !== 'boolean') return bad('skipFence must be true or false');
      if (p.skipFence === true && p.decision !== 'retry') return bad('skipFence only goes with decision retry');
      if ('result' in p) {
        const bytes = utf8Bytes(JSON.stringify(p.result) ?? '');
        if (bytes > MAX_RECOVERY_RESULT_BYTES && resultLimitApplies())
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
            decision: p.decision as RecoveryDecision,
            ...('result' in p ? { result: p.result } : {}),
            ...(p.run !== undefined ? { run: p.run as number } : {}),
            ...(p.park !== undefined ? { park: p.park as number } : {}),
            ...(p.skipFence === true ? { skipFence: true } : {}),
          },
        },
      };
  }
}

/** At most this many decisions in one `decisions` signal (one model response's calls, with room). */
export const MAX_BATCH = 100;
const KINDS: readonly DecisionKind[] = ['approve', 'reject', 'recover'];

export type Batch = { ok: true; items: { kind: DecisionKind; payload: unknown }[] } | { ok: false; why: string };

/**
 * Splits a `decisions` signal, `{ decisions: [{ kind, ...payload }] }`, into single decisions, each
 * then parsed and judged exactly as its own signal would be. One signal means one history event
 * and one workflow task for all the calls of a response.
 */
export function splitDecisions(raw: unknown): Batch {
  const list =
    raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>).decisions : undefined;
  if (!Array.isArray(list) || list.length === 0)
    return {
      ok: false,
      why: 'malformed decisions: expected { decisions: [{ kind, toolCallId, by, … }] } with at least one decision',
    };
  if (list.length > MAX_BATCH)
    return { ok: false, why: `malformed decisions: ${list.length} decisions in one signal; at most ${MAX_BATCH}` };
  const items: { kind: DecisionKind; payload: unknown }[] = [];
  for (const [i, d] of list.entries()) {
    const kind = d && typeof d === 'object' ? (d as Record<string, unknown>).kind : undefined;
    if (!KINDS.includes(kind as DecisionKind))
      return {
        ok: false,
        why: `malformed decisions: item ${i + 1} has kind ${JSON.stringify(kind) ?? 'undefined'}; use one of ${KINDS.join(', ')}`,
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
