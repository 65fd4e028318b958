import { setHandler } from '@temporalio/workflow';
import { grantsSignal } from './definitions';
import { activeGrants, grantFor, grantsUpdate } from './grants';
import type { LedgerInput } from './ledger';
import { DESCRIPTIONS } from './protocol';
import type { Grant, LedgerEntry, TurnInput } from './types';

// The turn's grants handler, with the state only it needs: the session's standing approvals. The
// turn (workflows/turn.ts) installs it when it starts.

type RecordChange = (toolCallId: string, change: LedgerInput) => LedgerEntry;

/**
 * The `grants` signal and the grants it keeps. A list that arrives while a model response is pending
 * waits for that response's calls; its revocations apply to them at once.
 */
export function handleGrants(deps: {
  input: Pick<TurnInput, 'grants' | 'grantsVersion'>;
  ledger: ReadonlyMap<string, LedgerEntry>;
  record: RecordChange;
}) {
  const { ledger, record } = deps;
  let grants = activeGrants(deps.input.grants);
  let grantsVersion = deps.input.grantsVersion ?? 0;
  // A list that arrives while a model response is pending waits until that response's calls have
  // been checked, so a replay that batches the signal before the response decides the same way.
  let callsPending = true;
  let heldGrants: Grant[] | undefined;
  setHandler(
    grantsSignal,
    (raw) => {
      const update = grantsUpdate(raw);
      if (!update) return;
      if (update.version <= grantsVersion) return; // stale, or overtaken by a newer list
      grantsVersion = update.version;
      if (callsPending) heldGrants = update.grants;
      else grants = update.grants;
    },
    { description: DESCRIPTIONS.grants },
  );
  return {
    /** A model call starts: lists that arrive now wait for its calls. */
    responsePending(): void {
      callsPending = true;
    },
    /** A new call that a standing approval covers needs no one to approve it now. */
    applyGrants(ids: readonly string[]): void {
      for (const id of ids) {
        const e = ledger.get(id)!;
        let g = e.state === 'awaiting_approval' ? grantFor(grants, e) : undefined;
        // A new grant waits for the next response; a revoke must not.
        const held = heldGrants;
        if (g && held && !held.some((h) => h.id === g!.id)) {
          g = grantFor(
            grants.filter((x) => held.some((h) => h.id === x.id)),
            e,
          );
        }
        // A grant is an unsigned claim: where the policy wants signatures, the call waits for one.
        if (g && e.approval?.signed)
          record(id, {
            type: 'decision_refused',
            kind: 'grant',
            by: g.by,
            why: `grant ${g.id} not used: the approval policy needs a signed approval for each call`,
          });
        else if (g) record(id, { type: 'approved', by: g.by, grant: g.id });
      }
      callsPending = false;
      if (heldGrants) [grants, heldGrants] = [heldGrants, undefined];
    },
  };
}
