import type * as z from 'zod/mini';
import { refusedBy } from './deciders';
import { checkPayload, MAX_NAME, passes, schemas } from './protocol';
import type { Grant, LedgerEntry } from './types';

// Standing approvals ("always allow"), pure. A grant names a tool and, optionally, one target (the
// recipient, the account…): it approves later calls of that tool (to that target) in its session.
// It never covers another tool or another target, and it never reaches calls created before it.

const S = schemas();

/** The length at which the registry cuts a call's target. */
export const MAX_TARGET = MAX_NAME;

export type GrantChange = { ok: true; grants: Grant[]; grant: Grant } | { ok: false; why: string };

/**
 * Checks a raw `grant` or `revoke` payload against its schema (workflows/protocol.ts): the first
 * field that fails is the reason. A `by` the system reserves is refused once the fields before it
 * are well-formed.
 */
function checkChange<T extends typeof S.grant | typeof S.revoke>(
  what: 'grant' | 'revoke',
  schema: T,
  raw: unknown,
): { ok: true; value: z.infer<T> } | { ok: false; why: string } {
  const checked = checkPayload(schema, raw);
  // target is the one field checked after by (a grant's); a payload that is no object has no by.
  if (!checked.ok && checked.field !== 'target') return { ok: false, why: `malformed ${what}: ${checked.why}` };
  const refused = refusedBy(what, (raw as { by: string }).by);
  if (refused) return { ok: false, why: refused };
  return checked.ok
    ? { ok: true, value: checked.value as z.infer<T> }
    : { ok: false, why: `malformed ${what}: ${checked.why}` };
}

/** Adds a grant from a raw `grant` signal (any Temporal client may send one: trust nothing). */
export function addGrant(grants: readonly Grant[], raw: unknown, at: string): GrantChange {
  const checked = checkChange('grant', S.grant, raw);
  if (!checked.ok) return checked;
  const { grantId, tool, by, target } = checked.value;
  const existing = grants.find((g) => g.id === grantId);
  // A client that resends a grant must not create a second one.
  if (existing) return { ok: true, grants: [...grants], grant: existing };
  const grant: Grant = { id: grantId, tool, ...(target ? { target } : {}), by, at };
  return { ok: true, grants: [...grants, grant], grant };
}

/** Revokes a grant from a raw `revoke` signal; revoked grants stay listed, for the audit. */
export function revokeGrant(grants: readonly Grant[], raw: unknown, at: string): GrantChange {
  const checked = checkChange('revoke', S.revoke, raw);
  if (!checked.ok) return checked;
  const { grantId, by } = checked.value;
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
 * a list that arrives late never replaces a newer one.
 */
export function grantsUpdate(raw: unknown): { version: number; grants: Grant[] } | undefined {
  const checked = checkPayload(S.grantsEnvelope, raw);
  return checked.ok ? { version: checked.value.version, grants: activeGrants(checked.value.grants) } : undefined;
}

/** Grants as the turn receives them: well-formed (GrantCheckSchema), active ones only; each as it came. */
export function activeGrants(raw: unknown): Grant[] {
  if (!Array.isArray(raw)) return [];
  return raw.filter((g): g is Grant => passes(S.grantCheck, g) && !(g as Grant).revokedAt);
}
