import { newEntry } from './ledger';
import type { ImportedCall, LedgerEntry, PlannedCall } from './types';

/**
 * The ledger entry of a tool call that an import left without a result, and whether its
 * lifecycle starts parked in recovery_required. Pure; the import's disposition decides:
 *
 * | disposition        | external effect                    | read-only tool         |
 * |--------------------|------------------------------------|------------------------|
 * | recovery_required  | parked: it may have run            | runs (no effect twice) |
 * | awaiting_approval  | asks for approval (if required)    | runs                   |
 * | run                | runs, approved by the old approver | runs                   |
 * | rejected           | rejected, never runs               | rejected               |
 *
 * A call this worker cannot run (unknown tool, arguments failing the schema) is invalid; when it
 * may have run before, its result says the outcome is unknown, so the model does not redo it blindly.
 */
export function importedEntry(
  call: PlannedCall,
  imported: ImportedCall,
  executionId: string,
  at: string,
): { entry: LedgerEntry; park?: string } {
  const { disposition, why, by } = imported;
  const event = { at, type: 'imported', disposition, why, ...(by ? { by } : {}) };
  if (disposition === 'rejected') {
    const base = newEntry(call, executionId, 0, at);
    return {
      entry: {
        ...base,
        state: 'rejected',
        rejectedBy: by ?? 'the previous runtime',
        error: `not executed: rejected before the import${by ? ` by ${by}` : ''}`,
        events: [event],
      },
    };
  }
  if (call.invalid) {
    const invalid =
      disposition === 'recovery_required'
        ? `outcome unknown: this imported call may have run in the previous runtime, and this worker cannot run it (${call.invalid}); check before doing it again`
        : call.invalid;
    const base = newEntry(call, executionId, 0, at, invalid);
    return { entry: { ...base, events: [event, ...base.events] } };
  }
  const base = newEntry(call, executionId, 0, at);
  const readOnly = call.spec?.effect === 'read';
  // An approval from the old runtime is unsigned: where the policy wants signatures, ask again.
  if (disposition === 'awaiting_approval' || readOnly || (disposition === 'run' && base.approval?.signed))
    return { entry: { ...base, events: [event, ...base.events] } };
  // Both remaining cases were approved before the import (or may have been): no approval is asked again.
  const entry: LedgerEntry = { ...base, state: 'running', events: [event] };
  if (by) entry.approvedBy = by;
  else if (disposition === 'run') entry.approvedBy = 'the previous runtime';
  else delete entry.approvedBy;
  // Whoever it was, no one approved it in this runtime.
  if (entry.approvedBy !== undefined) entry.approver = { kind: 'auto', why: 'import' };
  else delete entry.approver;
  return disposition === 'run' ? { entry } : { entry, park: `imported: ${why}` };
}
