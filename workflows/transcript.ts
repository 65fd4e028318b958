import type { ImportedCall, LedgerEntry, Message, ToolCall } from './types';

// The transcript invariant, enforced in one place: before any model call, every tool call in the
// transcript has exactly one tool result.

export function unpairedToolCalls(messages: readonly Message[]): string[] {
  const results = new Map<string, number>();
  for (const m of messages) if (m.role === 'tool') results.set(m.toolCallId, (results.get(m.toolCallId) ?? 0) + 1);
  const problems: string[] = [];
  for (const m of messages) {
    if (m.role !== 'assistant' || !m.toolCalls) continue;
    for (const call of m.toolCalls) {
      const n = results.get(call.id) ?? 0;
      if (n !== 1) problems.push(`${call.id} has ${n} results`);
    }
  }
  return problems;
}

export function toolResultMessage(
  call: Pick<ToolCall, 'id' | 'name'>,
  outcome: { result?: unknown; error?: string },
): Message {
  if (outcome.error !== undefined) {
    return { role: 'tool', toolCallId: call.id, name: call.name, content: `Error: ${outcome.error}`, isError: true };
  }
  const content = typeof outcome.result === 'string' ? outcome.result : JSON.stringify(outcome.result ?? null);
  return { role: 'tool', toolCallId: call.id, name: call.name, content };
}

/** Error results for the calls that have none yet, in transcript order. */
export function closeUnpaired(messages: readonly Message[], error: string): Message[] {
  const answered = new Set(messages.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
  return messages
    .flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []))
    .filter((c) => !answered.has(c.id))
    .map((c) => toolResultMessage(c, { error }));
}

/**
 * The results a cancelled turn adds so its transcript stays valid: each open call without a result
 * gets its real one if it finished, "outcome unknown" if it may have run, else "interrupted".
 */
export function resultsOnCancel(a: {
  openCalls: readonly ToolCall[];
  messages: readonly Message[];
  ledger: ReadonlyMap<string, LedgerEntry>;
  finished: ReadonlyMap<string, Message>;
  resume?: readonly ImportedCall[] | undefined;
}): Message[] {
  const answered = new Set(a.messages.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
  return a.openCalls
    .filter((c) => !answered.has(c.id))
    .map((c) => {
      const e = a.ledger.get(c.id);
      // An imported call that may have run is as unknown as one in flight.
      const unknown = e
        ? e.dispatched || e.state === 'recovery_required' || e.state === 'reconciling'
        : a.resume?.find((r) => r.call.id === c.id)?.disposition === 'recovery_required';
      return (
        a.finished.get(c.id) ??
        toolResultMessage(c, {
          error: unknown
            ? `outcome unknown: the turn was cancelled while this call${e ? ` (execution ${e.executionId})` : ''} was in flight; check before doing it again`
            : 'interrupted: the turn was cancelled',
        })
      );
    });
}

/** How many of a turn's messages its `messages` query answers with. */
export const TURN_CONTEXT = 12;

/**
 * A turn's messages as a person deciding one of its calls reads them: the user's request that
 * started the turn (always, however long the turn), then its latest messages, up to `max` in all.
 */
export function turnContext(messages: readonly Message[], max = TURN_CONTEXT): Message[] {
  if (messages.length <= max) return [...messages];
  const request = messages[0]!.role === 'user' ? [messages[0]!] : [];
  return [...request, ...messages.slice(-(max - request.length))];
}
