import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { ClientLike } from './own';
import { asOpenWorker } from './own';
import { IMPORT_MESSAGE_ID, OpenWorkerSession, sessionWorkflowId } from '../workflows/definitions';
import type { ImportedCall, SessionInput } from '../workflows/types';
import { ImportError, planImport } from './importPlan';
import { checkSessionId, OpenWorkerError } from './session';

export interface ImportResult {
  sessionId: string;
  sessionWorkflowId: string;
  protocol: string;
  /** Messages that became the session's transcript. */
  messages: number;
  /** Trailing tool calls without a result and what happens to each; resolved by turn 1. */
  pending: ImportedCall[];
  notes: string[];
  /** The message id of the turn that resumes `pending` (for waitForTurn), when there is one. */
  resumeMessageId?: string;
}

/**
 * Starts a session from a transcript exported by another agent runtime (OpenAI chat messages, one
 * per line). Nothing runs on import: trailing calls that may have run are parked in
 * recovery_required by the session's first turn; the others wait for approval or run as the file
 * proves allowed. Refuses a session id that exists or existed, so no execution ID is ever reused.
 */
export async function importSession(
  client: ClientLike,
  input: { sessionId: string; jsonl: string; source: string },
): Promise<ImportResult> {
  const c = asOpenWorker(client);
  const sessionId = checkSessionId(input.sessionId);
  let plan;
  try {
    plan = planImport(input.jsonl);
  } catch (err) {
    if (err instanceof ImportError) throw new OpenWorkerError(`${input.source}: ${err.message}`, 'bad_input');
    throw err;
  }
  if (!plan.transcript.length)
    throw new OpenWorkerError(`${input.source}: no user, assistant or tool messages to import`, 'bad_input');
  const workflowId = sessionWorkflowId(sessionId);
  const imported: NonNullable<SessionInput['imported']> = {
    protocol: plan.protocol,
    source: input.source,
    importedAt: new Date().toISOString(),
    messages: plan.transcript.length,
    notes: plan.notes,
    ...(plan.pending.length ? { resume: plan.pending } : {}),
  };
  try {
    await c.client.workflow.start('session', {
      workflowId,
      taskQueue: c.taskQueue,
      args: [{ sessionId, transcript: plan.transcript, imported } satisfies SessionInput],
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
      typedSearchAttributes: [{ key: OpenWorkerSession, value: sessionId }],
      staticSummary: `Session ${sessionId} (imported: ${plan.protocol}, ${plan.transcript.length} messages)`,
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) {
      throw new OpenWorkerError(
        `session '${sessionId}' already exists (or existed); import into a new session id`,
        'bad_input',
      );
    }
    throw err;
  }
  return {
    sessionId,
    sessionWorkflowId: workflowId,
    protocol: plan.protocol,
    messages: plan.transcript.length,
    pending: plan.pending,
    notes: plan.notes,
    ...(plan.pending.length ? { resumeMessageId: IMPORT_MESSAGE_ID } : {}),
  };
}
