import { questionOf } from '../workflows/answers';
import type { DecisionOutcome } from '../client/decisions';
import type { GrantOutcome, GrantView } from '../client/grants';
import type { ImportResult } from '../client/import';
import type { InboxItem, NotApplied, SessionView, UnreadableTurn } from '../client/inspect';
import type { WaitedTurn } from '../client/session';
import { pendingFence, retryNote } from '../workflows/ledger';
import { approvedByPerson } from '../workflows/deciders';
import { RECOVERY_DECISIONS } from '../workflows/protocol';
import { inCliTerms } from './flags';

// Human-readable output for the CLI; `--json` prints the library's values instead.

const short = (value: unknown, max = 100): string => {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
};

/** A decided retry that waits out the last attempt's window: a newer decision still replaces it. */
export function fenceLine(f: { until: string; attempt: number; by: string }): string {
  return `retry decided by ${f.by}, waiting out attempt ${f.attempt} until ${f.until} (a slow system may still apply it); a newer recover replaces it, --now runs it at once`;
}

export function formatTurn(t: WaitedTurn): string {
  const lines = [`${t.workflowId}: ${t.state}`];
  if (t.text) lines.push(`assistant: ${t.text}`);
  if (t.error) lines.push(`error: ${inCliTerms(t.error)}`);
  for (const e of t.ledger) {
    lines.push(
      `  ${e.toolCallId}  ${e.tool}${e.target ? ` → ${e.target}` : ''}  ${e.state}  (execution ${e.executionId})`,
    );
    if (e.state === 'awaiting_approval') {
      lines.push(`    args: ${short(e.arguments, 160)}`);
      lines.push(
        `    approve: openworker-temporal approve ${t.sessionId} ${e.toolCallId}    reject: openworker-temporal reject ${t.sessionId} ${e.toolCallId} --reason "…"`,
      );
    }
    if (e.state === 'awaiting_answer') {
      const q = questionOf(e.arguments);
      lines.push(`    asks: ${q.question}`);
      q.choices?.forEach((c, n) => lines.push(`      ${n + 1}. ${c}`));
      lines.push(`    answer: openworker-temporal answer ${t.sessionId} ${e.toolCallId} <answer>`);
    }
    if (e.state === 'recovery_required') {
      const why = [...e.events].reverse().find((ev) => ev.type === 'recovery_required')?.reason;
      lines.push(`    outcome unknown${why ? `: ${String(why)}` : ''}`);
      const fence = pendingFence(e);
      if (fence) lines.push(`    ${fenceLine(fence)}`);
      const note = retryNote(e);
      if (note) lines.push(`    ${note}`);
      lines.push(
        `    decide: openworker-temporal recover ${t.sessionId} ${e.toolCallId} --decision ${RECOVERY_DECISIONS.join('|')}`,
      );
    }
  }
  return lines.join('\n');
}

export function formatDecision(kind: string, d: DecisionOutcome): string {
  switch (d.outcome) {
    case 'applied':
      return (
        (d.fence
          ? `${kind} ${d.toolCallId}: applied (${d.workflowId}); the retry waits out attempt ${d.fence.attempt} until ${d.fence.until} (a slow system may still apply it); a newer decision replaces it, --now runs it at once`
          : `${kind} ${d.toolCallId}: applied (${d.workflowId})`) + (d.retryNote ? `\n  ${d.retryNote}` : '')
      );
    case 'ignored':
      return `${kind} ${d.toolCallId}: NOT applied: ${d.why}`;
    case 'delivered':
      return `${kind} ${d.toolCallId}: delivered to ${d.workflowId}, not applied yet: no worker has processed it (it takes effect when a worker runs) or the call is still in flight`;
  }
}

export function formatSession(v: SessionView): string {
  const lines = [`session ${v.sessionId}`];
  if (v.imported) {
    lines.push(
      `  imported (${v.imported.protocol}) from ${v.imported.source} at ${v.imported.importedAt}: ${v.imported.messages} messages`,
    );
    for (const n of v.imported.notes) lines.push(`    note: ${n}`);
  }
  for (const m of v.transcript) {
    if (m.role === 'user') lines.push(`  user: ${short(m.content, 200)}`);
    else if (m.role === 'assistant') {
      if (m.content) lines.push(`  assistant: ${short(m.content, 200)}`);
      for (const c of m.toolCalls ?? []) lines.push(`  assistant → ${c.name}(${short(c.arguments, 120)}) [${c.id}]`);
    } else lines.push(`  tool ${m.name} [${m.toolCallId}]: ${short(m.content, 160)}`);
  }
  if (v.pending.length)
    lines.push(
      `  queued: ${v.pending.map((p) => `${short(p.text, 60)}${p.steering ? ` (given to turn ${p.steering})` : ''}`).join(' | ')}`,
    );
  for (const r of v.refused ?? [])
    lines.push(`  refused message${r.messageId ? ` ${r.messageId}` : ''} at ${r.at}: ${r.reason}`);
  lines.push('turns:');
  for (const t of v.turns) {
    const steered = t.steered?.length ? `  (took ${t.steered.length} message(s) sent while it ran)` : '';
    lines.push(`  ${t.n}  ${t.state}  ${t.workflowId}${t.error ? `  (${inCliTerms(t.error)})` : ''}${steered}`);
    for (const d of t.notApplied ?? []) lines.push(`     ${notAppliedLine(d)}`);
  }
  lines.push('executions:');
  if (!v.executions.length) lines.push('  (none)');
  for (const e of v.executions) {
    const who = e.approvedBy
      ? `approved by ${e.approvedBy}${e.grantId ? ` (grant ${e.grantId})` : approvedByPerson(e) ? signedNote(e.signedApproval) : ''}`
      : e.rejectedBy
        ? `rejected by ${e.rejectedBy}`
        : '';
    const rec = e.recoveryDecision
      ? `, recovery ${e.recoveryDecision} by ${e.recoveredBy}${signedNote(e.signedRecovery)}`
      : '';
    const refused = e.events.filter((ev) => ev.type === 'decision_refused');
    const last = refused.at(-1);
    const note = last
      ? `\n    ${refused.length} decision${refused.length > 1 ? 's' : ''} refused; last: ${short(String(last.why), 200)}`
      : '';
    const fence = pendingFence(e);
    const retry = retryNote(e);
    const edited = e.originalDigest
      ? `\n    arguments edited by ${e.editedBy}: ${short(e.originalDigest, 23)} → ${short(e.argsDigest, 23)}`
      : '';
    lines.push(
      `  turn ${e.turn} ${e.toolCallId}  ${e.tool}  ${e.state}  attempts ${e.attempts}  ${e.executionId}  ${who}${rec}${edited}${note}${fence ? `\n    ${fenceLine(fence)}` : ''}${retry ? `\n    ${retry}` : ''}`,
    );
  }
  return lines.join('\n');
}

/** Whether a person's decision carried a verified signature. */
const signedNote = (signed: { keyId: string } | undefined): string =>
  signed ? ` (signed, key ${signed.keyId})` : ' (unsigned)';

/** The inbox row's argument preview as `key: value, …` (the call's page and `show` have them whole). */
const previewLine = (p: Record<string, string>): string =>
  Object.entries(p)
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ');

/** The calls, then one line per waiting turn that could not be read (its calls are not among them). */
export function formatInbox(calls: InboxItem[], unreadable: UnreadableTurn[] = []): string {
  const listed = calls.length ? formatInboxCalls(calls) : [];
  if (!unreadable.length)
    return listed.length ? listed.join('\n') : 'inbox is empty: nothing awaits approval, recovery or an answer';
  return [
    ...listed,
    `${unreadable.length} waiting turn(s) could not be read; their calls are not listed${calls.length ? ' above' : ''}:`,
    ...unreadable.map((u) => `  unreadable  ${u.workflowId}: ${u.why}`),
  ].join('\n');
}

function formatInboxCalls(items: InboxItem[]): string[] {
  const now = Date.now();
  return items.map((i) => {
    const age = Math.max(0, Math.round((now - Date.parse(i.since)) / 1000));
    const head = `${i.state.padEnd(18)} ${age}s ago  session ${i.sessionId} turn ${i.turn}  ${i.toolCallId}  ${i.tool}${i.target ? ` → ${i.target}` : ''}`;
    const last = i.notApplied?.at(-1);
    const refused = last ? `\n    ${notAppliedLine(last)}` : '';
    const asks = i.question
      ? `\n    asks: ${i.question.question}${i.question.choices ? ` (${i.question.choices.map((c, n) => `${n + 1}. ${c}`).join(', ')})` : ''}\n    answer: openworker-temporal answer ${i.sessionId} ${i.toolCallId} <answer>`
      : '';
    return `${head}\n    args: ${short(previewLine(i.argsPreview), 160)}${asks}${i.reason ? `\n    why: ${i.reason}` : ''}${i.fence ? `\n    ${fenceLine(i.fence)}` : ''}${i.retryNote ? `\n    ${i.retryNote}` : ''}${refused}`;
  });
}

export function formatImport(r: ImportResult): string {
  const lines = [`imported ${r.messages} messages into session ${r.sessionId} (${r.protocol})`];
  for (const n of r.notes) lines.push(`  note: ${n}`);
  if (!r.pending.length) lines.push('  no tool call was left without a result; send a message to continue');
  else
    lines.push(
      `  turn 1 resolves ${r.pending.length} tool call(s) left without a result; nothing that may have run is executed:`,
    );
  for (const p of r.pending) lines.push(`  ${p.call.id}  ${p.call.name}  → ${p.disposition}: ${p.why}`);
  return lines.join('\n');
}

const scopeOf = (g: { tool: string; target?: string }): string =>
  g.target ? `${g.tool} → ${g.target}` : `${g.tool} (any target)`;

export function formatGrantChange(what: 'granted' | 'revoked', g: GrantOutcome): string {
  const tail = g.outcome === 'applied' ? '' : ' (delivered; it takes effect when a worker runs)';
  return `${what} ${g.grant.id}: ${scopeOf(g.grant)} in session ${g.sessionId}${tail}`;
}

export function formatGrants(sessionId: string, gs: GrantView[]): string {
  if (!gs.length) return `session ${sessionId} has no grants; every call that needs approval asks`;
  return gs
    .map((g) => {
      const state = g.revokedAt ? `revoked by ${g.revokedBy} at ${g.revokedAt}` : 'active';
      const calls = g.approved
        .map((a) => `turn ${a.turn} ${a.toolCallId}${a.target ? ` → ${a.target}` : ''}`)
        .join(', ');
      return `${g.id}  ${scopeOf(g)}  by ${g.by} at ${g.at}  ${state}\n    approved: ${calls || '(none yet)'}`;
    })
    .join('\n');
}

/** A decision the turn did not apply, in one line: a signal cannot answer, so `show` and the inbox do. */
export const notAppliedLine = (d: NotApplied): string =>
  `${d.kind}${d.toolCallId ? ` ${d.toolCallId}` : ''}${d.by ? ` by ${d.by}` : ''} at ${d.at} not applied: ${short(d.why ?? '', 200)}`;
