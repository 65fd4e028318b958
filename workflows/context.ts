import { utf8Bytes } from './limits';
import type { ContextRef, Message, PlannedCall, ToolCall } from './types';

// The transcript by reference (#29): what a turn and a model call carry instead of the whole
// transcript, and the rules both the workflows and the model activity follow. Pure and sandbox-safe.

/** The assistant message of one model step: built the same way by the activity that stores it and the turn that keeps it. */
export function assistantMessage(text: string, calls: readonly PlannedCall[]): Message {
  const toolCalls: ToolCall[] = calls.map((c) => ({ id: c.toolCallId, name: c.name, arguments: c.arguments }));
  return { role: 'assistant', content: text, ...(toolCalls.length ? { toolCalls } : {}) };
}

/** Every tool call id the messages use: ids a later response may not take again. */
export function toolCallIdsIn(messages: readonly Message[]): Set<string> {
  return new Set(messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []).map((c) => c.id) : [])));
}

/**
 * The context a session keeps after a turn's messages joined its transcript: the turn's, when its
 * count fits the transcript; else the one it had (the messages it lacks go inline to the next turn).
 */
export function contextAfterTurn(
  kept: ContextRef | undefined,
  turn: ContextRef | undefined,
  transcriptLength: number,
): ContextRef | undefined {
  if (!turn) return kept;
  if (!Number.isSafeInteger(turn.messages) || turn.messages > transcriptLength) return kept;
  if (kept && turn.messages < kept.messages) return kept;
  return turn;
}

/** A stable key for a reference (the claim's fields in order). */
export function contextKey(ref: ContextRef): string {
  const claim = Object.keys(ref.claim)
    .sort()
    .map((k) => `${k}=${ref.claim[k]}`)
    .join('&');
  return `${ref.driver}:${claim}`;
}

/** What a turn has stored of its transcript: the reference, whether it holds the turn's history, and how many of its own messages. */
export interface StoredContext {
  ref: ContextRef | undefined;
  history: boolean;
  upTo: number;
  /** The reference comes from an earlier run of the session: store it again, whole. */
  anew?: boolean;
}

export const storedAtStart = (ref: ContextRef | undefined, anew = false): StoredContext => ({
  ref,
  history: false,
  upTo: 0,
  ...(anew && ref ? { anew: true } : {}),
});

/** A model call's input by reference: the stored context and every message since. */
export function contextInput(
  stored: StoredContext,
  history: readonly Message[],
  messages: readonly Message[],
): { base?: ContextRef; append: Message[]; anew?: boolean } {
  return {
    ...(stored.ref ? { base: stored.ref } : {}),
    append: [...(stored.history ? [] : history), ...messages.slice(stored.upTo)],
    ...(stored.anew ? { anew: true } : {}),
  };
}

/** The reference a turn returns to its session: only once a model call stored its history. */
export const turnContextRef = (stored: StoredContext): ContextRef | undefined =>
  stored.history ? stored.ref : undefined;

// Compaction: what the model sees of a long transcript. Tokens are estimated (UTF-8 bytes ÷ 4, plus
// 4 per message) unless the provider counts them; the estimate is documented in docs/concepts.md.

/** The context budget, in (estimated) tokens, when neither the setting nor the provider gives one. */
export const DEFAULT_CONTEXT_TOKENS = 100_000;
/** A context over this share of the budget asks for compaction before the next model call. */
export const COMPACT_AT = 0.8;
/** Compaction keeps the newest messages up to this share of the budget, word for word. */
export const KEEP_SHARE = 0.4;

export function estimateTokens(messages: readonly Message[]): number {
  let bytes = 0;
  for (const m of messages) {
    const text = m.role === 'assistant' && m.toolCalls ? m.content + JSON.stringify(m.toolCalls) : m.content;
    bytes += utf8Bytes(text) + 16;
  }
  return Math.ceil(bytes / 4);
}

/** The summary as the model reads it, in place of the messages it covers. */
export const summaryMessage = (text: string, covers: number): Message => ({
  role: 'user',
  content: `[Summary of the ${covers} earlier messages of this conversation, which are kept in its record]\n${text}`,
});

/** What the model sees: the summary, then the messages after it (the summary joins a first user message). */
export function modelView(
  messages: readonly Message[],
  summary: { text: string; covers: number } | undefined,
): Message[] {
  if (!summary) return [...messages];
  const head = summaryMessage(summary.text, summary.covers);
  const rest = messages.slice(summary.covers);
  const first = rest[0];
  if (first?.role === 'user')
    return [{ role: 'user', content: `${head.content}\n\n${first.content}` }, ...rest.slice(1)];
  return [head, ...rest];
}

/**
 * Where a summary may end: after `from`, at a message that is not a tool result and before which
 * every tool call has its result (so the kept messages pair up on their own), keeping the newest
 * messages within `keepTokens`. Undefined when no such cut leaves anything to summarise.
 */
export function compactionCut(
  messages: readonly Message[],
  from: number,
  keepTokens: number,
  count: (m: readonly Message[]) => number = estimateTokens,
): number | undefined {
  const open = new Set<string>();
  const safe: number[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!;
    if (i > from && m.role !== 'tool' && open.size === 0) safe.push(i);
    if (m.role === 'assistant') for (const c of m.toolCalls ?? []) open.add(c.id);
    if (m.role === 'tool') open.delete(m.toolCallId);
  }
  // The earliest safe cut whose kept messages fit; else the latest safe cut (keep as little as is safe).
  const fits = safe.find((i) => count(messages.slice(i)) <= keepTokens);
  return fits ?? safe[safe.length - 1];
}
