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

/** The turn's "current details" in the Web UI: its state and the ledger as a markdown table. */
export function renderDetails(status: TurnStatus): string {
  const lines = [
    `**Turn ${status.turn}** of session \`${status.sessionId}\`: **${status.state}** (iteration ${status.iteration})`,
  ];
  if (status.error) lines.push('', `Error: ${cell(status.error)}`);
  if (status.ledger.length) {
    lines.push(
      '',
      '| tool call | execution ID | tool | state | attempts | approved by | recovery |',
      '|---|---|---|---|---|---|---|',
    );
    for (const e of status.ledger) {
      const recovery = e.recoveryDecision ? `${e.recoveryDecision} by ${e.recoveredBy}` : '';
      lines.push(
        `| ${cell(e.toolCallId)} | \`${e.executionId}\` | ${cell(e.tool)}${e.target ? ` → ${cell(e.target)}` : ''} | ${e.state} | ${e.attempts} | ${cell(e.approvedBy ?? e.rejectedBy ?? '')} | ${cell(recovery)} |`,
      );
    }
  }
  for (const e of status.ledger) {
    // The marker is an awaited heartbeat: the server has it while the tool runs, this table only after.
    if (e.state === 'running' && e.runs > 0 && e.effect && e.recovery && isProtected(e.effect, e.recovery))
      lines.push(
        '',
        `\`${cell(e.toolCallId)}\` is running: once its tool is called, its activity's last heartbeat (Pending Activities) says \`"dispatched": true\`; this table shows it when the attempt reports.`,
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
    lines.push(
      '',
      '**Decisions not applied** (latest last):',
      '',
      '| at | decision | tool call | by | why |',
      '|---|---|---|---|---|',
    );
    for (const d of ignored)
      lines.push(
        `| ${d.at.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')} | ${d.kind} | ${cell(d.toolCallId ?? '')} | ${cell(d.by ?? '')} | ${cell(d.why ?? '')} |`,
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
  const pending = status.ledger.filter(
    (e) => e.state === 'awaiting_approval' || (e.state === 'recovery_required' && !pendingFence(e)),
  );
  if (pending.length) {
    lines.push(
      '',
      'Waiting for a decision: send signal `approve`/`reject` (or `recover`) with `{ "toolCallId": "…", "by": "you" }`; a decision that is not applied is listed above with why.',
    );
  }
  return lines.join('\n');
}
