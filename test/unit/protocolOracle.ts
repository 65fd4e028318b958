// The parsers as they were before workflows/protocol.ts (commit eeb7418), kept verbatim as the
// oracle of test/unit/protocol.test.ts: the schema-derived parsers must accept and refuse exactly
// the same payloads, with the same reasons, and ask the patched() gates in the same situations.
/* eslint-disable */
import { reservedName } from '../../workflows/deciders';
import { utf8Bytes } from '../../workflows/limits';

type DecisionKind = 'approve' | 'reject' | 'recover';
type RecoveryDecision = 'retry' | 'succeeded' | 'failed';
type Grant = {
  id: string;
  tool: string;
  target?: string;
  by: string;
  at: string;
  revokedAt?: string;
  revokedBy?: string;
};
type Rec = Record<string, unknown>;

const RECOVERY_DECISIONS: readonly RecoveryDecision[] = ['retry', 'succeeded', 'failed'];
const MAX_ID = 256;
const MAX_BY = 200;
const MAX_REASON = 2000;

function str(value: unknown, max: number): string | undefined {
  return typeof value === 'string' && value.length > 0 && value.length <= max ? value : undefined;
}

/** A result a person supplies with `recover succeeded`; as large as a tool's result may be by default. */
const MAX_RECOVERY_RESULT_BYTES = 256 * 1024;

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
  let signature: { keyId: string; signedAt: string; value: string } | undefined;
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
const MAX_BATCH = 100;
const KINDS: readonly DecisionKind[] = ['approve', 'reject', 'recover'];

type Batch = { ok: true; items: { kind: DecisionKind; payload: unknown }[] } | { ok: false; why: string };

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

type Parsed =
  | { ok: true; decision: { kind: DecisionKind; payload: unknown } }
  | { ok: false; why: string; toolCallId?: string; by?: string; decisionId?: string };
const MAX_GRANT_ID = 100;
const MAX_NAME = 200;

const gstr = (value: unknown, max: number): string | undefined =>
  typeof value === 'string' && value.length > 0 && value.length <= max ? value : undefined;

type GrantChange = { ok: true; grants: Grant[]; grant: Grant } | { ok: false; why: string };

/**
 * Whether `by` is a name the system reserves, asked of the session (`namesReserved`, patched()) only
 * for such a name: before the refusal a grant or revoke could be made under one.
 */
const refusedName = (what: string, by: string, namesReserved: () => boolean): GrantChange | undefined => {
  const reserved = reservedName(by);
  return reserved && namesReserved() ? { ok: false, why: `refused ${what}: by ${reserved}` } : undefined;
};

/** Adds a grant from a raw `grant` signal (any Temporal client may send one: trust nothing). */
export function addGrant(
  grants: readonly Grant[],
  raw: unknown,
  at: string,
  namesReserved: () => boolean = () => true,
): GrantChange {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    return { ok: false, why: 'malformed grant: payload must be an object' };
  const p = raw as Rec;
  const grantId = gstr(p.grantId, MAX_GRANT_ID);
  const tool = gstr(p.tool, MAX_NAME);
  const by = gstr(p.by, MAX_NAME);
  const target = gstr(p.target, MAX_NAME);
  if (!grantId)
    return {
      ok: false,
      why: `malformed grant: grantId must be a non-empty string of at most ${MAX_GRANT_ID} characters`,
    };
  if (!tool) return { ok: false, why: 'malformed grant: tool must name a tool' };
  if (!by) return { ok: false, why: 'malformed grant: by must name who grants' };
  const refused = refusedName('grant', by, namesReserved);
  if (refused) return refused;
  if (p.target !== undefined && !target)
    return { ok: false, why: `malformed grant: target must be a non-empty string of at most ${MAX_NAME} characters` };
  const existing = grants.find((g) => g.id === grantId);
  // A client that resends a grant must not create a second one.
  if (existing) return { ok: true, grants: [...grants], grant: existing };
  const grant: Grant = { id: grantId, tool, ...(target ? { target } : {}), by, at };
  return { ok: true, grants: [...grants, grant], grant };
}

/** Revokes a grant from a raw `revoke` signal; revoked grants stay listed, for the audit. */
export function revokeGrant(
  grants: readonly Grant[],
  raw: unknown,
  at: string,
  namesReserved: () => boolean = () => true,
): GrantChange {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    return { ok: false, why: 'malformed revoke: payload must be an object' };
  const p = raw as Rec;
  const grantId = gstr(p.grantId, MAX_GRANT_ID);
  const by = gstr(p.by, MAX_NAME);
  if (!grantId || !by) return { ok: false, why: 'malformed revoke: grantId and by are required' };
  const refused = refusedName('revoke', by, namesReserved);
  if (refused) return refused;
  const existing = grants.find((g) => g.id === grantId);
  if (!existing) return { ok: false, why: `no grant ${grantId} in this session` };
  if (existing.revokedAt) return { ok: true, grants: [...grants], grant: existing };
  const revoked: Grant = { ...existing, revokedAt: at, revokedBy: by };
  return { ok: true, grants: grants.map((g) => (g.id === grantId ? revoked : g)), grant: revoked };
}

export function grantsUpdate(raw: unknown): { version?: number; grants: Grant[] } | undefined {
  if (Array.isArray(raw)) return { grants: activeGrants(raw) };
  if (!raw || typeof raw !== 'object') return undefined;
  const { version, grants } = raw as { version?: unknown; grants?: unknown };
  if (!Number.isInteger(version) || (version as number) < 1 || !Array.isArray(grants)) return undefined;
  return { version: version as number, grants: activeGrants(grants) };
}

/** Grants as the turn receives them: well-formed, active ones only. */
export function activeGrants(raw: unknown): Grant[] {
  if (!Array.isArray(raw)) return [];
  return raw.filter(
    (g): g is Grant =>
      !!g &&
      typeof g === 'object' &&
      !!gstr(g.id, MAX_GRANT_ID) &&
      !!gstr(g.tool, MAX_NAME) &&
      !!gstr(g.by, MAX_NAME) &&
      (g.target === undefined || !!gstr(g.target, MAX_NAME)) &&
      !g.revokedAt,
  );
}

/** The dispatch update's validator, its payload check only (workflows/turnHandlers.ts). */
export function dispatchProblem(req: any): string | undefined {
  if (
    !req ||
    typeof req.executionId !== 'string' ||
    typeof req.activityId !== 'string' ||
    typeof req.attempt !== 'number'
  )
    return 'dispatch: expected { executionId, activityId, attempt }';
  return undefined;
}

/** The notify update's validator, its payload check only (workflows/notifications.ts). */
export function notifyProblem(c: any): string | undefined {
  if (
    !c ||
    typeof c.executionId !== 'string' ||
    typeof c.park !== 'string' ||
    typeof c.by !== 'string' ||
    !c.by ||
    typeof c.leaseMs !== 'number' ||
    !(c.leaseMs > 0)
  )
    return 'notify: expected { executionId, park, by, leaseMs }';
  return undefined;
}
