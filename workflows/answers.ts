import { refusedBy } from './deciders';
import { idsOf } from './decisions';
import { checkPayload, schemas } from './protocol';
import type { AnswerSignal, LedgerEntry } from './types';

// Ask the user: the ask_user built-in parks its call for a person's answer, like an approval, but
// nothing runs: no activity, no external effect. The answer is the call's result.
//
//   awaiting_answer ─ answer (one of the choices, when given) ─▶ succeeded   (result: the answer)
//         └─ the deadline (timeoutSeconds) passes, or the turn is cancelled ─▶ failed (the model is told)
//
// An answer arrives as the `answer` signal { toolCallId, by, answer, decisionId? }. A signal cannot
// be refused, so one that does not apply (a bad payload, a reserved name as `by`, a call that is not
// asking, an answer not among the choices or naming two, one taken at or after the deadline, a second
// answer) is recorded in the turn's decisions with why, and the call keeps waiting (or has failed).
// Rules here are pure; the turn's intake (intake.ts) and call.ts run them.

/** The question an ask_user call asks, read from its arguments (checked by the tool's schema). */
export interface Question {
  question: string;
  choices?: string[];
  timeoutSeconds?: number;
}

/** The longest deadline an ask_user call may set: 30 days. */
export const MAX_ANSWER_TIMEOUT_S = 30 * 24 * 3600;

/** The question of a call's arguments, defensively (the arguments passed the tool's schema when planned). */
export function questionOf(args: unknown): Question {
  const a = (args && typeof args === 'object' ? args : {}) as Record<string, unknown>;
  const choices = Array.isArray(a.choices) ? a.choices.filter((c): c is string => typeof c === 'string') : [];
  const t = a.timeoutSeconds;
  return {
    question: typeof a.question === 'string' ? a.question : '',
    ...(choices.length ? { choices } : {}),
    ...(typeof t === 'number' && Number.isFinite(t) && t > 0
      ? { timeoutSeconds: Math.min(t, MAX_ANSWER_TIMEOUT_S) }
      : {}),
  };
}

/** How long the call waits for an answer (ms), or undefined: until answered or the turn is cancelled. */
export const answerDeadlineMs = (q: Question): number | undefined =>
  q.timeoutSeconds !== undefined ? Math.round(q.timeoutSeconds * 1000) : undefined;

type Match = { ok: true; answer: string } | { ok: false; why: string };

/** The choices an answer names (their indexes): by its text (exact case first, then any case; spaces trimmed), by its number (1 = the first). */
function named(choices: readonly string[], said: string): { text?: number; number?: number } {
  const exact = choices.findIndex((c) => c.trim() === said);
  const text = exact >= 0 ? exact : choices.findIndex((c) => c.trim().toLowerCase() === said.toLowerCase());
  const n = /^\d+$/.test(said) ? Number(said) : 0;
  return { ...(text >= 0 ? { text } : {}), ...(n >= 1 && n <= choices.length ? { number: n - 1 } : {}) };
}

/** The choice an answer names, or undefined: none, or two (one by its text, another by its number). */
function chosen(choices: readonly string[], said: string): number | undefined {
  const { text, number } = named(choices, said);
  return text !== undefined && number !== undefined && text !== number ? undefined : (text ?? number);
}

/** How a person names choice i so that no other choice is meant: by its text, its number, either, or (rarely) neither. */
function howToSay(choices: readonly string[], i: number): string {
  const choice = `'${choices[i]!.slice(0, 80)}'`;
  const ways = [...new Set([choices[i]!.trim(), String(i + 1)])].filter((w) => chosen(choices, w) === i);
  return ways.length
    ? `for ${choice} answer ${ways.map((w) => `'${w.slice(0, 80)}'`).join(' or ')}`
    : `no answer names ${choice} alone`;
}

/**
 * The answer as recorded, or why it is refused. With choices, an answer names one of them by its
 * text (exact case first, then any case; surrounding spaces ignored) or by its number (1 = the
 * first), and is recorded as that choice. One that is a choice's text and another choice's number
 * (choices 10, 1, 5 and the answer 1) is refused as ambiguous, saying how to name each.
 */
export function matchAnswer(q: Question, answer: string): Match {
  if (!q.choices) return { ok: true, answer };
  const { choices } = q;
  const said = answer.trim();
  const i = chosen(choices, said);
  if (i !== undefined) return { ok: true, answer: choices[i]! };
  const { text, number } = named(choices, said);
  if (text !== undefined && number !== undefined)
    return {
      ok: false,
      why: `'${said.slice(0, 80)}' is ambiguous: it is choice ${text + 1}'s text and choice ${number + 1}'s number; ${howToSay(choices, text)}, ${howToSay(choices, number)}; the question still waits`,
    };
  return {
    ok: false,
    why: `'${said.slice(0, 80)}' is not one of the choices: ${choices.map((c, k) => `${k + 1}. ${c}`).join(', ')}; the question still waits`,
  };
}

/** When an asking call's deadline passes (epoch ms, by the turn's clock): asked at + timeoutSeconds; undefined without one. */
export function answerDeadlineAt(entry: Pick<LedgerEntry, 'arguments' | 'events'>): number | undefined {
  const ms = answerDeadlineMs(questionOf(entry.arguments));
  const asked = entry.events.find((e) => e.type === 'awaiting_answer')?.at;
  return ms === undefined || asked === undefined ? undefined : Date.parse(asked) + ms;
}

/** Why an answer the turn took at or after the question's deadline is not applied. */
export const pastDeadline = (q: Question): string =>
  `not applied: the question's deadline (${q.timeoutSeconds} seconds) had passed when the turn took this answer; a deadline that passed is final`;

/**
 * Why an answer cannot apply to this call (undefined entry: no such call in the turn), or the answer
 * to record. `takenAt` (epoch ms) is the turn's time when its handler takes the answer: at or after
 * the deadline, the deadline wins. The turn cannot see when the server received a signal; a worker
 * that was down at the deadline gets the timer and the answer in one task, signals first, so the
 * arrival order there is not the server's. The turn's time is: a task that starts at or after the
 * deadline is one in which the timer fired or is about to (it fires at the deadline or later).
 */
export function judgeAnswer(
  entry: LedgerEntry | undefined,
  a: Pick<AnswerSignal, 'toolCallId' | 'answer'>,
  takenAt?: number,
): Match {
  if (!entry) return { ok: false, why: `no tool call '${a.toolCallId}' in this turn` };
  if (entry.state === 'awaiting_answer') {
    const q = questionOf(entry.arguments);
    const deadline = answerDeadlineAt(entry);
    if (takenAt !== undefined && deadline !== undefined && takenAt >= deadline)
      return { ok: false, why: pastDeadline(q) };
    return matchAnswer(q, a.answer);
  }
  if (entry.answeredBy !== undefined)
    return { ok: false, why: `already answered by ${entry.answeredBy}: the first answer counts` };
  if (entry.events.some((e) => e.type === 'unanswered'))
    return { ok: false, why: `no longer asking: ${entry.error ?? 'the question ended without an answer'}` };
  return {
    ok: false,
    why: `call '${entry.toolCallId}' (${entry.tool}) is not asking a question (state ${entry.state})`,
  };
}

/**
 * The `answer` signal's payload checked by its schema, and who sent it by the one check of reserved
 * names every decision signal goes through (workflows/deciders.ts, as in parseDecision): the answer,
 * or why it is ignored (with the well-formed ids it names).
 */
export function parseAnswer(
  raw: unknown,
):
  | { ok: true; answer: AnswerSignal }
  | { ok: false; why: string; toolCallId?: string; by?: string; decisionId?: string } {
  const checked = checkPayload(schemas().answer, raw);
  if (!checked.ok && checked.field === undefined) return { ok: false, why: checked.why };
  const ids = idsOf(raw as Record<string, unknown>);
  // toolCallId and by come first in the schema: when a later field fails, both are well-formed.
  const named = checked.ok || (checked.field !== 'toolCallId' && checked.field !== 'by');
  const refused = named ? refusedBy('answer', ids.by!) : undefined;
  if (refused) return { ok: false, why: refused, ...ids };
  return checked.ok ? { ok: true, answer: checked.value } : { ok: false, why: checked.why, ...ids };
}

/** The error the model reads when no answer came. */
export const noAnswer = (q: Question): string =>
  `no answer came within ${q.timeoutSeconds} seconds (the question's deadline); continue without it, or ask again`;

/** The error the model reads when the turn was cancelled while the question waited. */
export const NO_ANSWER_CANCELLED = 'no answer: the turn was cancelled while the question waited';
