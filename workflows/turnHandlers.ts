import { CancellationScope, setHandler } from '@temporalio/workflow';
import { dispatchUpdate, grantsSignal } from './definitions';
import { activeGrants, grantFor, grantsUpdate } from './grants';
import type { LedgerInput } from './ledger';
import { activityIdFor } from './ledger';
import { checkPayload, DESCRIPTIONS, schemas } from './protocol';
import type { Grant, LedgerEntry, TurnInput } from './types';

// Two of the turn's handlers, each with the state only it needs: the session's standing approvals,
// and the dispatch marker. The turn (workflows/turn.ts) installs them when it starts.

type RecordChange = (toolCallId: string, change: LedgerInput) => LedgerEntry;

/**
 * The `grants` signal and the grants it keeps. `holdWhilePending` answers whether a list that
 * arrives while a model response is pending waits for that response's calls (a patch in the turn).
 */
export function handleGrants(deps: {
  input: Pick<TurnInput, 'grants' | 'grantsVersion'>;
  ledger: ReadonlyMap<string, LedgerEntry>;
  record: RecordChange;
  holdWhilePending: () => boolean;
  /** Whether a held list's revocations apply to the pending response's calls (a patch in the turn). */
  revokeWhilePending: () => boolean;
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
      if (update.version !== undefined) {
        if (update.version <= grantsVersion) return; // stale, or overtaken by a newer list
        grantsVersion = update.version;
      }
      if (callsPending && deps.holdWhilePending()) heldGrants = update.grants;
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
        // A new grant waits for the next response; a revoke must not (asked only when it changes the answer).
        const held = heldGrants;
        if (g && held && !held.some((h) => h.id === g!.id) && deps.revokeWhilePending()) {
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

/**
 * The dispatch marker: the execute activity asks here before it calls the adapter. Only the
 * current run of a call still waiting for its outcome may proceed, so a zombie attempt never can,
 * and nothing is dispatched once the turn is being cancelled.
 */
export function handleDispatch(deps: {
  entries: () => LedgerEntry[];
  record: RecordChange;
  reached?: (entry: LedgerEntry) => void;
}): void {
  const { entries, record } = deps;
  setHandler(
    dispatchUpdate,
    (req) => {
      const entry = entries().find((e) => e.executionId === req.executionId);
      if (!entry) return { proceed: false, reason: 'unknown execution' }; // only in histories from before the validator
      const current = activityIdFor(entry.executionId, entry.runs);
      const refuse =
        entry.state !== 'running' || req.activityId !== current
          ? `stale attempt: call is ${entry.state} and its current activity is ${current}`
          : CancellationScope.current().consideredCancelled
            ? 'the turn is being cancelled'
            : undefined;
      if (refuse) {
        record(entry.toolCallId, {
          type: 'dispatch_refused',
          activityId: req.activityId,
          attempt: req.attempt,
          reason: refuse,
        });
        return { proceed: false, reason: refuse };
      }
      deps.reached?.(entry);
      // The ledger never throws; a call it could not mark dispatched must not reach its tool.
      const marked = record(entry.toolCallId, { type: 'dispatched', activityId: req.activityId, attempt: req.attempt });
      return marked.state === 'dispatched'
        ? { proceed: true }
        : { proceed: false, reason: `the ledger could not record the dispatch (call is ${marked.state})` };
    },
    {
      // A rejected update leaves no trace in history, so any client's junk is refused here.
      validator: (req) => {
        const checked = checkPayload(schemas().dispatch, req);
        if (!checked.ok) throw new Error(checked.why);
        const entry = entries().find((e) => e.executionId === req.executionId);
        if (!entry) throw new Error(`dispatch: unknown execution ${req.executionId}`);
        // An approved call whose first run is not scheduled yet has no activity: run 1's ID would pass
        // as current (activityIdFor(id, 0) is run 1's) and mark it dispatched, so scheduling it then
        // breaks the ledger. Refused here, where no trace goes to history (validators do not replay).
        if (entry.runs === 0 && entry.state === 'running')
          throw new Error(`dispatch: no run of ${req.executionId} has been scheduled`);
      },
      description: DESCRIPTIONS.dispatch,
    },
  );
}
