import type { Approver, LedgerEntry } from './types';

// Who decided: a person, or no one (the system approved the call itself). Pure and workflow-safe:
// the turn, the session, the library client, the CLI and the approvals app all import this module.
//
// A check asks the approver's `kind`, never its name: the names below are what the ledger and its
// views show for the system, and a person may not decide under them (refused at every boundary).

/** Names the system shows where no person decided; compared trimmed and case-insensitively. */
export const RESERVED_NAMES: readonly string[] = ['auto', 'system', 'policy', 'grant', 'the previous runtime'];

/**
 * A name as it reads: compatibility forms folded (fullwidth 'ａｕｔｏ' is 'auto'), invisible characters
 * (zero-width spaces, joiners) dropped, white space collapsed, lower case. Lookalikes from other
 * scripts stay distinct; no check trusts a name anyway (the approver's kind decides).
 */
const comparable = (name: string): string =>
  name
    .normalize('NFKC')
    .replace(/\p{Default_Ignorable_Code_Point}/gu, '')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase();

/** The one-line reason a name cannot be who decided, or undefined when a person may use it. */
export function reservedName(name: string): string | undefined {
  if (!RESERVED_NAMES.includes(comparable(name))) return undefined;
  const list = RESERVED_NAMES.map((n) => `'${n}'`).join(', ');
  return `'${name.slice(0, 40)}' is reserved for decisions no person made (reserved: ${list}); decide under your own name`;
}

/**
 * The one check of who sent a decision signal (approve, reject, recover, answer, grant, revoke): why
 * it is refused, or undefined.
 */
export function refusedBy(what: string, by: string): string | undefined {
  const reserved = reservedName(by);
  return reserved ? `refused ${what}: by ${reserved}` : undefined;
}

/** The approver of a call that needs none: its tool asks for no approval (a read, or by its policy). */
export const AUTO_BY_POLICY: Approver = { kind: 'auto', why: 'policy' };

/**
 * Who approved a call. Entries recorded by builds before `approver` existed (an older worker's
 * query answer, an old turn result) are read from their events: the kind, never the name.
 */
export function approverOf(
  e: Pick<LedgerEntry, 'approver' | 'approvedBy' | 'grantId' | 'events'>,
): Approver | undefined {
  if (e.approver) return e.approver;
  if (e.grantId !== undefined) return { kind: 'auto', why: 'grant' };
  if (e.events.some((ev) => ev.type === 'auto_approved')) return AUTO_BY_POLICY;
  if (e.events.some((ev) => ev.type === 'approved') && e.approvedBy !== undefined)
    return { kind: 'person', name: e.approvedBy };
  if (e.approvedBy !== undefined && e.events.some((ev) => ev.type === 'imported'))
    return { kind: 'auto', why: 'import' };
  return undefined;
}

/** A person approved the call (not its policy, a standing grant or an import). */
export const approvedByPerson = (e: Parameters<typeof approverOf>[0]): boolean => approverOf(e)?.kind === 'person';

/** The call needs no approval: its tool's policy let it run. */
export const needsNoApproval = (e: Parameters<typeof approverOf>[0]): boolean => {
  const a = approverOf(e);
  return a?.kind === 'auto' && a.why === 'policy';
};
