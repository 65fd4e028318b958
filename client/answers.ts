import { randomUUID } from 'node:crypto';
import { judgeAnswer } from '../workflows/answers';
import { answerSignal, turnStatusQuery, turnWorkflowId } from '../workflows/definitions';
import { MAX_ANSWER } from '../workflows/protocol';
import type { LedgerEntry } from '../workflows/types';
import { checkBy } from './decisions';
import type { DecisionOutcome } from './decisions';
import type { ClientLike } from './own';
import { asOpenWorker } from './own';
import { activeTurn, checkSessionId, OpenWorkerError, signalLimitError } from './session';

export interface AnswerTarget {
  sessionId: string;
  toolCallId: string;
  /** The answer: free text, or one of the question's choices (its text or its number, 1 = the first). */
  answer: string;
  /** Address a specific turn; default: the session's running turn. */
  turn?: number;
  /** Who answers; default Settings.user (OPENWORKER_USER, else USER). */
  by?: string;
  /** How long to wait for the turn to confirm; 0 = only deliver the signal. Default 10 s. */
  waitMs?: number;
}

/**
 * Answers a question an ask_user call asks (workflows/answers.ts): the `answer` signal. Checked here
 * first when the turn answers its query (the call asks, the answer is one of the choices), then judged
 * by the turn, which records it applied or ignored with why; the outcome says which.
 */
export async function answer(client: ClientLike, t: AnswerTarget): Promise<DecisionOutcome> {
  const c = asOpenWorker(client);
  const sessionId = checkSessionId(t.sessionId);
  if (!t.toolCallId)
    throw new OpenWorkerError('a tool call id is required (see `openworker-temporal inbox`)', 'bad_input');
  if (typeof t.answer !== 'string' || !t.answer.trim() || t.answer.length > MAX_ANSWER)
    throw new OpenWorkerError(`\`answer\` must be non-empty text of at most ${MAX_ANSWER} characters`, 'bad_input');
  const by = checkBy(t.by, c.settings.user);
  let turn = t.turn;
  if (turn === undefined) {
    const active = await activeTurn(c, sessionId);
    if (!active)
      throw new OpenWorkerError(
        `session '${sessionId}' has no running turn asking a question; see 'openworker-temporal show ${sessionId}'`,
        'not_found',
      );
    turn = active.turn;
  } else if (!Number.isSafeInteger(turn) || turn < 1)
    throw new OpenWorkerError(`\`turn\` must be a positive integer, got ${turn}`, 'bad_input');
  const workflowId = turnWorkflowId(sessionId, turn);
  const handle = c.client.workflow.getHandle(workflowId);
  const ledger = async (): Promise<
    { ledger: LedgerEntry[]; decisions: { decisionId?: string; outcome: string; why?: string }[] } | undefined
  > => c.client.withDeadline(Date.now() + 3000, () => handle.query(turnStatusQuery)).catch(() => undefined);
  // Said before sending when the turn can tell: the call is not asking, or the answer is not a choice.
  const before = await ledger();
  if (before) {
    const entry = before.ledger.find((e) => e.toolCallId === t.toolCallId);
    const verdict = judgeAnswer(entry, { toolCallId: t.toolCallId, answer: t.answer });
    if (!verdict.ok) throw new OpenWorkerError(`${verdict.why} (${workflowId})`, entry ? 'ignored' : 'not_found');
  }
  const decisionId = randomUUID();
  try {
    await handle.signal(answerSignal, { toolCallId: t.toolCallId, by, answer: t.answer, decisionId });
  } catch (err) {
    throw (
      signalLimitError(err, 'answer', workflowId, 'this turn takes no more signals: cancel it and ask anew') ??
      new OpenWorkerError(`could not deliver the answer to ${workflowId}: ${(err as Error).message}`, 'not_found')
    );
  }
  const outcome: DecisionOutcome = {
    sessionId,
    toolCallId: t.toolCallId,
    workflowId,
    decisionId,
    outcome: 'delivered',
  };
  const until = Date.now() + (t.waitMs ?? 10_000);
  while (Date.now() < until) {
    const s = await ledger();
    if (!s) break; // no worker: the signal waits in history and is judged when one starts
    const record = s.decisions.find((d) => d.decisionId === decisionId);
    if (record)
      return {
        ...outcome,
        outcome: record.outcome as 'applied' | 'ignored',
        ...(record.why ? { why: record.why } : {}),
      };
    await new Promise((r) => setTimeout(r, 150));
  }
  return outcome;
}
