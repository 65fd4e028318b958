import { condition, isCancellation, proxyActivities } from '@temporalio/workflow';
import { messageOf } from './failures';
import { argsDigest, canonicalJson } from './identity';
import type { ApproveSignal, LedgerEntry, Message, PlannedCall, TurnActivities } from './types';

/*
 * Approve with edits: an operator approves a call with changed arguments.
 *
 *   approve { arguments } ─judged (state, binding, signature over the NEW digest)─▶ pending edit
 *        pending edit ─planToolCalls (the tool's schema, on the worker)─▶ valid ─▶ edited + approved
 *                                                                      └ invalid ─▶ decision_refused
 *                                                                                   (still awaiting_approval)
 *
 * The schema lives on the worker, so the turn asks it with the planning activity, before anything
 * is recorded as approved: an edit that fails the schema consumes nothing. Decisions for the call
 * that arrive while the edit is checked are judged after it (workflows/intake.ts), as if the edit
 * had applied at once. The execution ID stays: nothing ran yet. The model is told what ran: the
 * tool result says the arguments were edited, with them, while the assistant message keeps what
 * the model asked.
 */

/** An accepted approve-with-edits whose arguments the worker has not checked yet. */
export interface PendingEdit {
  by: string;
  arguments: Record<string, unknown>;
  /** `sha256:<hex>` of the edited arguments: what a signature covers and what the ledger records. */
  digest: string;
}

/**
 * What an approve asks of the call's arguments: none (a plain approval), or an edit with its digest.
 * Arguments equal to the ones awaiting approval are no edit.
 */
export function editOf(
  entry: Pick<LedgerEntry, 'argsDigest'>,
  payload: Pick<ApproveSignal, 'arguments'>,
): { arguments: Record<string, unknown>; digest: string } | undefined {
  if (!payload.arguments) return undefined;
  const digest = argsDigest(payload.arguments);
  return digest === entry.argsDigest ? undefined : { arguments: payload.arguments, digest };
}

/** The worker's verdict on edited arguments: the call planned with them, or why it could not be asked. */
export type EditCheck = { plan: PlannedCall } | { refused: string };

/** Why a checked edit does not apply (undefined: it does). */
export function editProblem(call: Pick<LedgerEntry, 'tool'>, check: EditCheck): string | undefined {
  if ('refused' in check) return check.refused;
  if (check.plan.name !== call.tool) return `the worker planned '${check.plan.name}', not '${call.tool}'`;
  return check.plan.invalid ? `edited arguments refused: ${check.plan.invalid}` : undefined;
}

/** The note the model reads in the tool result of a call that ran with edited arguments. */
export function editNote(entry: Pick<LedgerEntry, 'editedBy' | 'arguments'>): string {
  return `[${entry.editedBy ?? 'an operator'} edited the arguments of this call before approving it; it ran with ${canonicalJson(entry.arguments)}]`;
}

/** The tool result the model reads: unchanged unless the call was approved with edits. */
export function withEditNote(message: Message, entry: LedgerEntry | undefined): Message {
  if (message.role !== 'tool' || !entry?.originalDigest) return message;
  return { ...message, content: `${editNote(entry)}\n${message.content}` };
}

// Checking edited arguments is the tool's planning (schema, size, target, approvers): read-only, retried a little.
const { planToolCalls } = proxyActivities<TurnActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 3 },
});

interface EditIntake {
  editPending(toolCallId: string): PendingEdit | undefined;
  editChecked(toolCallId: string, check: EditCheck): void;
}

/**
 * Waits until a call awaiting approval is decided, checking each approve-with-edits on the way.
 * Without an edit it is the plain wait, and schedules nothing.
 */
export async function awaitApproval(
  call: Pick<PlannedCall, 'toolCallId' | 'name'>,
  current: (id: string) => LedgerEntry,
  intake: EditIntake,
  cancelledWhy: string,
): Promise<void> {
  const id = call.toolCallId;
  const waiting = () => current(id).state === 'awaiting_approval';
  while (waiting()) {
    await condition(() => !waiting() || intake.editPending(id) !== undefined);
    const edit = intake.editPending(id);
    if (!edit || !waiting()) continue;
    let check: EditCheck;
    try {
      const [plan] = await planToolCalls.executeWithOptions(
        { summary: `check edited arguments of ${call.name} ${current(id).executionId}`.slice(0, 190) },
        [{ calls: [{ id, name: call.name, arguments: edit.arguments }] }],
      );
      check = plan ? { plan } : { refused: 'the worker returned no plan for the edited arguments' };
    } catch (err) {
      if (isCancellation(err)) {
        intake.editChecked(id, { refused: cancelledWhy });
        throw err;
      }
      check = { refused: `the edited arguments could not be checked: ${messageOf(err)}` };
    }
    intake.editChecked(id, check);
  }
}
