import { checkPayload, schemas } from './protocol';
import type { AnswerSignal, LedgerEntry } from './types';

// Ask the user: the ask_user built-in parks its call for a person's answer, like an approval, but
// nothing runs: no activity, no external effect. The answer is the call's result.
//
//   awaiting_answer ─ answer (one of the choices, when given) ─▶ succeeded   (result: the answer)
//         └─ the deadline (timeoutSeconds) passes, or the turn is cancelled ─▶ failed (the model is told)
//
// An answer arrives as the `answer` signal { toolCallId, by, answer, decisionId? }. A signal cannot
// be refused, so one that does not apply (a bad payload, a call that is not asking, an answer not
// among the choices, a second answer) is recorded in the turn's decisions with why, and the call
// keeps waiting. Rules here are pure; the turn's intake (intake.ts) and call.ts run them.

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

/**
 * The answer as recorded, or why it is refused. With choices, an answer names one of them exactly,
 * ignoring case and surrounding spaces, or by its number (1 = the first); it is recorded as the choice.
 */
export function matchAnswer(q: Question, answer: string): { ok: true; answer: string } | { ok: false; why: string } {
  if (!q.choices) return { ok: true, answer };
  const said = answer.trim();
  const n = /^\d+$/.test(said) ? Number(said) : 0;
  if (n >= 1 && n <= q.choices.length) return { ok: true, answer: q.choices[n - 1]! };
  const found = q.choices.find((c) => c.trim().toLowerCase() === said.toLowerCase());
  if (found !== undefined) return { ok: true, answer: found };
  return {
    ok: false,
    why: `'${said.slice(0, 80)}' is not one of the choices: ${q.choices.map((c, i) => `${i + 1}. ${c}`).join(', ')}; the question still waits`,
  };
}

/** Why an answer cannot apply to this call (undefined entry: no such call in the turn), or the answer to record. */
export function judgeAnswer(
  entry: LedgerEntry | undefined,
  a: Pick<AnswerSignal, 'toolCallId' | 'answer'>,
): { ok: true; answer: string } | { ok: false; why: string } {
  if (!entry) return { ok: false, why: `no tool call '${a.toolCallId}' in this turn` };
  if (entry.state === 'awaiting_answer') return matchAnswer(questionOf(entry.arguments), a.answer);
  if (entry.answeredBy !== undefined)
    return { ok: false, why: `already answered by ${entry.answeredBy}: the first answer counts` };
  if (entry.events.some((e) => e.type === 'unanswered'))
    return { ok: false, why: `no longer asking: ${entry.error ?? 'the question ended without an answer'}` };
  return {
    ok: false,
    why: `call '${entry.toolCallId}' (${entry.tool}) is not asking a question (state ${entry.state})`,
  };
}

/** The `answer` signal's payload checked by its schema: the answer, or why it is ignored (with the ids it names). */
export function parseAnswer(
  raw: unknown,
): { ok: true; answer: AnswerSignal } | { ok: false; why: string; toolCallId?: string; by?: string } {
  const checked = checkPayload(schemas().answer, raw);
  if (checked.ok) return { ok: true, answer: checked.value };
  const r = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const id = (v: unknown) => (typeof v === 'string' && v.length > 0 && v.length <= 256 ? v : undefined);
  const toolCallId = id(r.toolCallId);
  const by = id(r.by);
  return { ok: false, why: checked.why, ...(toolCallId ? { toolCallId } : {}), ...(by ? { by } : {}) };
}

/** The error the model reads when no answer came. */
export const noAnswer = (q: Question): string =>
  `no answer came within ${q.timeoutSeconds} seconds (the question's deadline); continue without it, or ask again`;

/** The error the model reads when the turn was cancelled while the question waited. */
export const NO_ANSWER_CANCELLED = 'no answer: the turn was cancelled while the question waited';
