import { questionOf } from './answers';
import { MAX_NOT_APPLIED_KEPT, omittedDecisions } from './audit';
import { invariantViolations, pendingFence, retryNote } from './ledger';
import { isProtected } from './policy';
import type { DecisionRecord, TurnStatus } from './types';

const NOT_APPLIED_SHOWN = 5;

/**
 * The turn's latest decisions that were not applied, optionally those naming one call: a signal
 * cannot answer its sender, so the details, `show`, the inbox and the approvals page list these.
 */
export function notAppliedDecisions(decisions: readonly DecisionRecord[], toolCallId?: string): DecisionRecord[] {
  return decisions
    .filter((d) => d.outcome === 'ignored' && (toolCallId === undefined || d.toolCallId === toolCallId))
    .slice(-NOT_APPLIED_SHOWN);
}

const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ').slice(0, 120);

/** Ledger entries the details list; a longer ledger says how many more and where to read them. */
export const LEDGER_SHOWN = 50;
const PENDING_NAMED = 5;

const isWaiting = (e: TurnStatus['ledger'][number]): boolean =>
  e.state === 'awaiting_approval' ||
  e.state === 'awaiting_answer' ||
  (e.state === 'recovery_required' && !pendingFence(e));

/**
 * The first lines of the details: a turn that waits for a person says so before anything else (the
 * Web UI shows the top of the details first), naming the calls and how to decide them.
 */
function waitingHeadline(status: TurnStatus): string[] {
  const pending = status.ledger.filter(isWaiting);
  if (!pending.length) return [];
  const named = pending.slice(0, PENDING_NAMED).map((e) => {
    const what =
      e.state === 'awaiting_approval'
        ? 'approve or reject'
        : e.state === 'awaiting_answer'
          ? `answer: ${cell(questionOf(e.arguments).question)}`
          : 'recovery_required: retry, succeeded or failed';
    return `\`${cell(e.toolCallId)}\` ${cell(e.tool)}${e.target ? ` → ${cell(e.target)}` : ''} (${what})`;
  });
  const more = pending.length > PENDING_NAMED ? `; and ${pending.length - PENDING_NAMED} more` : '';
  return [
    `**Waiting for a person** to decide ${pending.length === 1 ? 'a call' : `${pending.length} calls`}: ${named.join('; ')}${more}.`,
    '',
    `Waiting for a decision: decide in the approvals app, with \`openworker-temporal approve ${cell(status.sessionId)} <call>\` (or \`reject\`, \`recover\`), or send signal \`approve\`/\`reject\` (or \`recover\`) with \`{ "toolCallId": "…", "by": "you" }\`; a decision that is not applied is listed below with why.`,
    '',
  ];
}

/** One ledger entry as a line that wraps (a wide table is clipped in the Web UI's details panel). */
function ledgerLine(e: TurnStatus['ledger'][number]): string {
  const who = e.approvedBy
    ? ` · approved by ${cell(e.approvedBy)}`
    : e.rejectedBy
      ? ` · rejected by ${cell(e.rejectedBy)}`
      : '';
  const recovery = e.recoveryDecision ? ` · ${e.recoveryDecision} by ${cell(e.recoveredBy ?? '')}` : '';
  return `- \`${cell(e.toolCallId)}\` ${cell(e.tool)}${e.target ? ` → ${cell(e.target)}` : ''}: **${e.state}** · attempts ${e.attempts}${who}${recovery} · \`${e.executionId}\``;
}

/** The turn's "current details" in the Web UI: whether it waits for a person, its state and its ledger. */
export function renderDetails(status: TurnStatus): string {
  const lines = [
    ...waitingHeadline(status),
    `**Turn ${status.turn}** of session \`${status.sessionId}\`: **${status.state}** (iteration ${status.iteration})`,
  ];
  if (status.error) lines.push('', `Error: ${cell(status.error)}`);
  if (status.ledger.length) {
    lines.push('', `**Ledger** (${status.ledger.length} ${status.ledger.length === 1 ? 'call' : 'calls'}):`, '');
    for (const e of status.ledger.slice(0, LEDGER_SHOWN)) lines.push(ledgerLine(e));
    const more = status.ledger.length - LEDGER_SHOWN;
    if (more > 0)
      lines.push(
        '',
        `…and ${more} more: the turn's \`status\` query (Queries tab) or \`openworker-temporal show ${cell(status.sessionId)}\` lists every call.`,
      );
  }
  for (const e of status.ledger) {
    // The marker is an awaited heartbeat: the server has it while the tool runs, the ledger only after.
    if (e.state === 'running' && e.runs > 0 && e.effect && e.recovery && isProtected(e.effect, e.recovery))
      lines.push(
        '',
        `\`${cell(e.toolCallId)}\` is running: once its tool is called, its activity's last heartbeat (Pending Activities) says \`"dispatched": true\`; the ledger above shows it when the attempt reports.`,
      );
    const fence = pendingFence(e);
    if (fence)
      lines.push(
        '',
        `\`${cell(e.toolCallId)}\`: retry decided by ${cell(fence.by)}, waiting out attempt ${fence.attempt} until ${fence.until.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')} (a slow system may still apply it). A newer \`recover\` replaces it; \`"skipFence": true\` runs it now.`,
      );
    const note = retryNote(e);
    if (note) lines.push('', `\`${cell(e.toolCallId)}\`: ${note}.`);
  }
  const ignored = notAppliedDecisions(status.decisions);
  if (ignored.length) {
    lines.push('', '**Decisions not applied** (latest last):', '');
    for (const d of ignored)
      lines.push(
        `- ${d.at.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')} ${d.kind}${d.toolCallId ? ` \`${cell(d.toolCallId)}\`` : ''}${d.by ? ` by ${cell(d.by)}` : ''}: ${cell(d.why ?? '')}`,
      );
    const omitted = omittedDecisions(status.decisions);
    if (omitted)
      lines.push('', `…and ${omitted} earlier ones not kept: a turn keeps the latest ${MAX_NOT_APPLIED_KEPT}.`);
  }
  const violations = invariantViolations(status.ledger);
  if (violations.length)
    lines.push(
      '',
      `**Ledger invariant violated** (a bug; the call waits for a person): ${cell(violations.join('; '))}`,
    );
  return lines.join('\n');
}
