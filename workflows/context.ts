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

/** The session's messages a stored context does not hold yet (all of them without one). */
export function notStoredYet(transcript: readonly Message[], context: ContextRef | undefined): Message[] {
  return transcript.slice(context?.messages ?? 0);
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
