import { ed25519 } from '@noble/curves/ed25519';
import { sha256 } from '@noble/hashes/sha256';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';
import { canonicalJson } from './identity';
import type { ApprovalRequirement, DecisionSignature, LedgerEntry } from './types';

// Signed decisions, pure and sandbox-safe: the CLI signs with Node's crypto, the turn verifies
// here with a pure-JS Ed25519, so a replay of the same history reaches the same verdicts.

/**
 * How far a signature's time may run ahead of the turn's clock (the Temporal server's): the signer's
 * clock is another machine's, so this is the one cross-clock comparison, with a bounded tolerance.
 * A signer ahead by up to this much gets that much longer than maxAge; one behind gets less (safe).
 */
export const FUTURE_SKEW_MS = 60_000;
export const DEFAULT_MAX_AGE_MS = 15 * 60_000;

/** What a signature covers. `decision` is `approve`, `reject` or `recover:<retry|retry-now|succeeded|failed>`. */
export interface SignedFields {
  executionId: string;
  argsDigest: string;
  decision: string;
  by: string;
  signedAt: string;
  /** recover only: the park the sender answers, and the digest of the result it supplies. */
  park?: number;
  resultDigest?: string;
}

/** The exact bytes an approver signs: one field per line, so no field can bleed into another. */
export function signedMessage(f: SignedFields): Uint8Array {
  const lines = [
    'openworker-decision/v1',
    `execution=${f.executionId}`,
    `args=${f.argsDigest}`,
    `decision=${f.decision}`,
    `park=${f.park ?? '-'}`,
    `result=${f.resultDigest ?? '-'}`,
    `by=${f.by}`,
    `at=${f.signedAt}`,
  ];
  if (lines.some((l) => l.includes('\n'))) throw new Error('signed fields must not contain line breaks');
  return utf8ToBytes(lines.join('\n'));
}

/** `sha256:<hex>` of a recovery result, or undefined when the decision carries none. */
export const resultDigestOf = (result: unknown): string | undefined =>
  result === undefined ? undefined : `sha256:${bytesToHex(sha256(utf8ToBytes(canonicalJson(result))))}`;

/** A key's id: the first 16 hex digits of the SHA-256 of its raw 32 bytes. */
export const keyIdOf = (publicKey: Uint8Array): string => `ed25519:${bytesToHex(sha256(publicKey)).slice(0, 16)}`;

const B64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Base64 → bytes without Buffer or atob (neither is in the workflow sandbox everywhere). */
export function base64Bytes(text: string): Uint8Array | undefined {
  if (!B64.test(text) || text.length % 4 !== 0) return undefined;
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const clean = text.replace(/=+$/, '');
  const out = new Uint8Array(Math.floor((clean.length * 3) / 4));
  let bits = 0;
  let acc = 0;
  let i = 0;
  for (const ch of clean) {
    acc = (acc << 6) | alphabet.indexOf(ch);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[i++] = (acc >> bits) & 0xff;
    }
  }
  return out;
}

export type Authorization =
  { ok: true; signer?: { name: string; keyId: string; signedAt: string } } | { ok: false; why: string };

export interface DecisionToAuthorize {
  kind: 'approve' | 'reject' | 'recover';
  by: string;
  signature?: DecisionSignature;
  /** recover only */
  decision?: string;
  park?: number;
  result?: unknown;
  skipFence?: boolean;
}

/** The `decision` field a signature covers: a retry that skips the fence is a decision of its own. */
export const decisionToSign = (kind: string, decision?: unknown, skipFence?: boolean): string =>
  kind === 'recover' ? `recover:${String(decision)}${skipFence ? '-now' : ''}` : kind;

/**
 * Whether a decision that the ledger would apply may take effect: checks its signature against
 * the approvers the worker attached to the call and, when a policy is set, who may decide it.
 * `used` holds the signatures already accepted in this turn; a match is a replay.
 */
export function authorizeDecision(
  req: ApprovalRequirement | undefined,
  entry: Pick<LedgerEntry, 'executionId' | 'argsDigest' | 'tool' | 'target'>,
  d: DecisionToAuthorize,
  atMs: number,
  used: ReadonlySet<string>,
): Authorization {
  const sig = d.signature;
  // Without approver keys on the worker there is nothing to check against: the old, unsigned protocol.
  if (!req) return { ok: true };
  const names = (list: readonly string[]) => (list.length ? list.join(', ') : 'nobody');
  if (!sig) {
    // Rejecting never causes an effect, so it needs no signature.
    if (!req.signed || d.kind === 'reject') return { ok: true };
    const what = d.kind === 'approve' ? 'approvals' : 'recovery decisions';
    return {
      ok: false,
      why: `unsigned: the approval policy accepts only ${what} signed by ${names(req.allowed)} (openworker-temporal ${d.kind} --key <name>)`,
    };
  }
  const approver = req.approvers.find((a) => a.keyId === sig.keyId);
  if (!approver)
    return { ok: false, why: `wrongly signed: key ${sig.keyId} is not one of this worker's approver keys` };
  const publicKey = base64Bytes(approver.publicKey);
  const signature = base64Bytes(sig.value);
  const signedAtMs = Date.parse(sig.signedAt);
  if (!publicKey || !signature || signature.length !== 64 || !Number.isFinite(signedAtMs))
    return { ok: false, why: 'wrongly signed: malformed signature' };
  const decision = decisionToSign(d.kind, d.decision, d.skipFence);
  let message: Uint8Array;
  try {
    message = signedMessage({
      executionId: entry.executionId,
      argsDigest: entry.argsDigest,
      decision,
      by: d.by,
      signedAt: sig.signedAt,
      ...(d.park !== undefined ? { park: d.park } : {}),
      ...(d.kind === 'recover' && d.result !== undefined ? { resultDigest: resultDigestOf(d.result) } : {}),
    });
  } catch {
    return { ok: false, why: 'wrongly signed: a signed field has a line break' };
  }
  let valid = false;
  try {
    valid = ed25519.verify(signature, message, publicKey, { zip215: false });
  } catch {
    valid = false;
  }
  if (!valid)
    return {
      ok: false,
      why: `wrongly signed: the signature by ${sig.keyId} does not match this call's execution ID, arguments, decision, sender and time`,
    };
  if (d.by !== approver.name)
    return { ok: false, why: `wrongly signed: sent as '${d.by}' but signed with ${approver.name}'s key` };
  if (used.has(sig.value))
    return { ok: false, why: `replayed: this signature by ${approver.name} was already used in this turn` };
  const age = atMs - signedAtMs;
  if (age > req.maxAgeMs)
    return {
      ok: false,
      why: `expired: signed at ${sig.signedAt}, ${Math.round(age / 1000)} s before it arrived (at most ${Math.round(req.maxAgeMs / 1000)} s); sign it again (if it was signed just now, the signer's clock is behind)`,
    };
  if (-age > FUTURE_SKEW_MS)
    return {
      ok: false,
      why: `expired: signed at ${sig.signedAt}, in the future of this turn's clock; check the signer's clock`,
    };
  // Anyone may reject; approving and recovering are for the approvers the policy names.
  if (req.signed && d.kind !== 'reject' && !req.allowed.includes(approver.name)) {
    const what = `${entry.tool}${entry.target !== undefined ? ` → ${entry.target}` : ''}`;
    return {
      ok: false,
      why: `unauthorised: ${approver.name} may not decide ${what}; the policy${req.rule ? ` (${req.rule})` : ''} allows ${names(req.allowed)}`,
    };
  }
  return { ok: true, signer: { name: approver.name, keyId: sig.keyId, signedAt: sig.signedAt } };
}
