import { questionOf } from '../workflows/answers';
import type { LedgerEntry, TurnStatus } from '../workflows/types';
import { needsNoApproval } from '../workflows/deciders';
import type { RecoveryDecision } from '../workflows/protocol';
import { RECOVERY_DECISIONS } from '../workflows/protocol';
import { inCliTerms } from './flags';

// What the chat REPL prints and how it reads answers. Pure, so the wording is tested as a table;
// cli/chat.ts does the terminal and Temporal I/O.

const ARG_MAX = 200;

/** One argument value for a person: strings as they are, long ones cut with a count of what is left. */
export function shortValue(value: unknown, max = ARG_MAX): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max)}… (${flat.length - max} more characters)` : flat;
}

/** The arguments, one `key: value` line each (at most 12 keys). */
export function argumentLines(args: unknown, indent = '    '): string[] {
  if (!args || typeof args !== 'object' || Array.isArray(args)) return [`${indent}${shortValue(args)}`];
  const entries = Object.entries(args as Record<string, unknown>);
  const lines = entries.slice(0, 12).map(([k, v]) => `${indent}${k}: ${shortValue(v)}`);
  if (entries.length > 12) lines.push(`${indent}… ${entries.length - 12} more arguments`);
  return lines;
}

export const callLabel = (e: Pick<LedgerEntry, 'tool' | 'target' | 'toolCallId'>): string =>
  `${e.tool}${e.target ? ` → ${e.target}` : ''} [${e.toolCallId}]`;

export type ApprovalAnswer = { kind: 'once' } | { kind: 'always'; scope: 'session' | 'target' } | { kind: 'reject' };

export function approvalPrompt(e: LedgerEntry): string[] {
  const choices = ['y = approve once', `a = always for this session (${e.tool})`];
  if (e.target) choices.push(`t = always for ${e.target}`);
  choices.push('n = reject');
  return [`? approve ${callLabel(e)}`, ...argumentLines(e.arguments), `  ${choices.join(' · ')}`];
}

/** Reads an answer to the approval prompt; undefined means "ask again". */
export function parseApproval(line: string, e: Pick<LedgerEntry, 'target'>): ApprovalAnswer | undefined {
  switch (line.trim().toLowerCase()) {
    case 'y':
    case 'yes':
      return { kind: 'once' };
    case 'a':
    case 'always':
      return { kind: 'always', scope: 'session' };
    case 't':
      return e.target ? { kind: 'always', scope: 'target' } : undefined;
    case 'n':
    case 'no':
      return { kind: 'reject' };
    default:
      return undefined;
  }
}

/** What is known about a call whose outcome is unknown, for the person deciding. */
export function recoveryLines(e: LedgerEntry): string[] {
  const last = <T extends string>(type: T) => [...e.events].reverse().find((ev) => ev.type === type);
  const parked = last('recovery_required');
  const unknown = last('outcome_unknown');
  const reconciled = last('reconciled');
  const lines = [
    `! ${callLabel(e)} needs a recovery decision: its outcome is unknown`,
    ...argumentLines(e.arguments),
    `    why: ${String(parked?.reason ?? 'unknown')}`,
    `    attempts: ${e.attempts}, runs: ${e.runs}, dispatch marker: ${e.dispatched ? 'yes (the tool was called)' : 'no'}${unknown?.lastHeartbeatPhase ? `, last phase: ${String(unknown.lastHeartbeatPhase)}` : ''}`,
  ];
  if (reconciled)
    lines.push(
      `    reconcile answer: ${String(reconciled.answer)}${reconciled.reason ? ` (${String(reconciled.reason)})` : ''}`,
    );
  lines.push(`    execution ID (the idempotency key): ${e.executionId}`);
  lines.push('  r = retry with the same execution ID · s = it succeeded · f = it failed');
  return lines;
}

export type RecoveryAnswer = RecoveryDecision;

/** A recovery decision, or its first letter (r, s, f). */
export function parseRecovery(line: string): RecoveryAnswer | undefined {
  const a = line.trim().toLowerCase();
  return RECOVERY_DECISIONS.find((d) => a === d || a === d[0]);
}

const approval = (e: LedgerEntry): string =>
  e.grantId
    ? `approved by grant ${e.grantId}`
    : needsNoApproval(e)
      ? 'needs no approval'
      : e.approvedBy
        ? `approved by ${e.approvedBy}`
        : 'imported';

/** The lines to print for what changed in a call since the last look (`before` undefined = new). */
export function callChange(before: LedgerEntry | undefined, now: LedgerEntry): string[] {
  if (before && before.state === now.state) return [];
  const lines: string[] = [];
  // A call seen for the first time past its approval still says who let it through.
  const passed = !['awaiting_approval', 'invalid', 'rejected', 'awaiting_answer'].includes(now.state);
  // ask_user: answered, not approved (questionLines asks it).
  if (now.tool === 'ask_user' && now.answeredBy !== undefined)
    return [`✓ ${callLabel(now)} answered by ${now.answeredBy}: ${shortValue(now.result, 120)}`];
  if (before?.state === 'awaiting_answer' || now.state === 'awaiting_answer')
    return now.state === 'failed' ? [`✗ ${callLabel(now)}: ${shortValue(now.error ?? '', 160)}`] : [];
  if (passed && (!before || before.state === 'awaiting_approval')) lines.push(`→ ${callLabel(now)} ${approval(now)}`);
  switch (now.state) {
    case 'awaiting_approval':
      if (!before) lines.push(`→ ${callLabel(now)} waits for approval`);
      break;
    case 'reconciling':
      lines.push(`… ${callLabel(now)}: outcome unknown, asking the external system`);
      break;
    case 'succeeded':
      lines.push(`✓ ${callLabel(now)} succeeded: ${shortValue(now.result, 120)}`);
      break;
    case 'failed':
      lines.push(`✗ ${callLabel(now)} failed: ${shortValue(now.error ?? 'error', 160)}`);
      break;
    case 'rejected':
      lines.push(`✗ ${callLabel(now)} ${now.error ?? 'rejected'}`);
      break;
    case 'invalid':
      lines.push(`✗ ${now.tool} [${now.toolCallId}] not run: ${shortValue(now.error ?? 'invalid', 160)}`);
      break;
    default:
      break;
  }
  return lines;
}

/** An ask_user call's question as the chat prints it: the next line typed is the answer. */
export function questionLines(e: LedgerEntry): string[] {
  const q = questionOf(e.arguments);
  return [
    `? the agent asks [${e.toolCallId}]: ${q.question}`,
    ...(q.choices ?? []).map((c, i) => `    ${i + 1}. ${c}`),
    ...(q.timeoutSeconds !== undefined ? [`    (it waits ${q.timeoutSeconds} s for an answer)`] : []),
  ];
}

/** The status line shown while nothing needs the user. */
export function statusLine(t: Pick<TurnStatus, 'state' | 'ledger' | 'iteration'>): string {
  const busy = t.ledger.filter((e) => e.state === 'running' || e.state === 'dispatched' || e.state === 'reconciling');
  if (busy.length) return `running ${busy.map((e) => e.tool).join(', ')}…`;
  return `thinking (model call ${Math.max(1, t.iteration)})…`;
}

export function turnEnd(t: Pick<TurnStatus, 'state' | 'text' | 'error' | 'turn'>): string[] {
  switch (t.state) {
    case 'completed':
      return [`assistant: ${t.text ?? ''}`];
    case 'cancelled':
      return [`turn ${t.turn} cancelled; the session takes the next message`];
    default:
      return [`turn ${t.turn} ${t.state}${t.error ? `: ${inCliTerms(t.error)}` : ''}`];
  }
}

/** A line typed while a turn runs: `/queue <text>` waits for a turn of its own, anything else steers. */
export function parseTypedDuringTurn(line: string): { text: string; queue: boolean } | undefined {
  const text = line.trim();
  const queued = /^\/queue(\s+|$)/.exec(text);
  const rest = queued ? text.slice(queued[0].length).trim() : text;
  return rest ? { text: rest, queue: !!queued } : undefined;
}

/** What the chat says when a line typed during turn `turn` (unknown yet: undefined) was sent. */
export function sentDuringTurn(turn: number | undefined, queue: boolean): string {
  const which = turn ? `turn ${turn}` : 'the running turn';
  return queue
    ? `(queued: it runs as its own turn after ${which})`
    : `(given to ${which}: its next model call reads it, after the calls under way; if the turn ends first, it runs as the next turn)`;
}

/** Where a message sent during a turn went, once that turn ended. */
export function steeredInto(turn: number, text: string): string {
  return `(turn ${turn} took your message "${shortValue(text, 60)}"; it starts no turn of its own)`;
}
