import { reservedName } from './deciders';
import type { Grant, GrantSignal, LedgerEntry, RevokeSignal } from './types';

// Standing approvals ("always allow"), pure. A grant names a tool and, optionally, one target (the
// recipient, the account…): it approves later calls of that tool (to that target) in its session.
// It never covers another tool or another target, and it never reaches calls created before it.

const MAX_ID = 100;
const MAX_NAME = 200;
/** The length at which the registry cuts a call's target. */
export const MAX_TARGET = 200;

const str = (value: unknown, max: number): string | undefined =>
  typeof value === 'string' && value.length > 0 && value.length <= max ? value : undefined;

export type GrantChange = { ok: true; grants: Grant[]; grant: Grant } | { ok: false; why: string };

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
  const p = raw as Partial<Record<keyof GrantSignal, unknown>>;
  const grantId = str(p.grantId, MAX_ID);
  const tool = str(p.tool, MAX_NAME);
  const by = str(p.by, MAX_NAME);
  const target = str(p.target, MAX_NAME);
  if (!grantId)
    return { ok: false, why: `malformed grant: grantId must be a non-empty string of at most ${MAX_ID} characters` };
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
  const p = raw as Partial<Record<keyof RevokeSignal, unknown>>;
  const grantId = str(p.grantId, MAX_ID);
  const by = str(p.by, MAX_NAME);
  if (!grantId || !by) return { ok: false, why: 'malformed revoke: grantId and by are required' };
  const refused = refusedName('revoke', by, namesReserved);
  if (refused) return refused;
  const existing = grants.find((g) => g.id === grantId);
  if (!existing) return { ok: false, why: `no grant ${grantId} in this session` };
  if (existing.revokedAt) return { ok: true, grants: [...grants], grant: existing };
  const revoked: Grant = { ...existing, revokedAt: at, revokedBy: by };
  return { ok: true, grants: grants.map((g) => (g.id === grantId ? revoked : g)), grant: revoked };
}

/** The grant that approves this new call, if any: same tool, and the same target when it names one. */
export function grantFor(grants: readonly Grant[], entry: Pick<LedgerEntry, 'tool' | 'target'>): Grant | undefined {
  // Targets are cut to 200 characters in the ledger: a cut one could stand for many, so no target grant covers it.
  return grants.find(
    (g) =>
      !g.revokedAt &&
      g.tool === entry.tool &&
      (g.target === undefined || (g.target === entry.target && g.target.length < MAX_TARGET)),
  );
}

/**
 * The session's `grants` signal to its running turn: `{ version, grants }`, versions increasing, so
 * a list that arrives late never replaces a newer one. (A bare array, from the first builds, has none.)
 */
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
      !!str(g.id, MAX_ID) &&
      !!str(g.tool, MAX_NAME) &&
      !!str(g.by, MAX_NAME) &&
      (g.target === undefined || !!str(g.target, MAX_NAME)) &&
      !g.revokedAt,
  );
}
