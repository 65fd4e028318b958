import { messageProblem } from './limits';
import { checkPayload, schemas } from './protocol';
import type { Message, MessageTurn, QueuedMessage, RefusedMessage, TurnSummary } from './types';

// Steering: a message sent while a turn runs is given to that turn's next model call.
//
//   session: message arrives ─ turn running? ─ yes ─ `steer` signal to the turn ─┐  (the message stays
//                                 └─ no, or sent with `queue: true` ─ waits        │   in `pending`)
//   turn:    steer signal ─ inbox ─ next model call takes it: a user message after  ◄┘
//            the previous response's tool results ─ once that call answered, result.steered lists its id
//   session: the turn ends ─ drops exactly result.steered from `pending`; the rest run as next turns
//
// Nothing is lost: a message leaves `pending` only when a turn says a model call answered after it
// (a turn cancelled or failed before that leaves it out of its result and its messages). Nothing is
// doubled: the turn takes each messageId once, and the session removes what the turn took.

/** The pending messages the running turn `turn` has not been given yet (never those sent with `queue`). */
export function toSteer(pending: readonly QueuedMessage[], turn: number): QueuedMessage[] {
  return pending.filter((m) => !m.queue && m.steering !== turn);
}

/**
 * `pending` after turn `n` ended: without the messages it took (`steered`); the others lose their
 * mark and wait for their own turns, in order.
 */
export function afterTurn(pending: readonly QueuedMessage[], steered: readonly string[] | undefined): QueuedMessage[] {
  const took = new Set(steered ?? []);
  return pending.filter((m) => !took.has(m.messageId)).map(({ steering: _offered, ...m }) => m);
}

/** A steering message in the turn, with the workflow task (history length) it arrived in. */
export interface Steer {
  messageId: string;
  text: string;
  at: number;
}

/**
 * The messages a model call started at history length `now` takes: those that arrived in an EARLIER
 * workflow task. One that arrived in the same task waits for the next call: a live run may have
 * handled it after the event that starts the call, while a replay hands it over first (signals before
 * results), so taking it would make the transcript depend on how events were batched.
 */
export function takeSteers(inbox: readonly Steer[], now: number): { take: Steer[]; keep: Steer[] } {
  return { take: inbox.filter((s) => s.at < now), keep: inbox.filter((s) => s.at >= now) };
}

/**
 * The turn's side: the `steer` signal handler, and what the next model call takes. A message counts
 * as taken only once the model call it was given to answered: a cancel or a failure before that
 * leaves it to the session, which runs it as a turn of its own.
 */
export function createSteeringInbox(deps: { historyLength: () => number }) {
  let inbox: Steer[] = [];
  const seen = new Set<string>();
  const taken: string[] = [];
  // Given to the model call in flight, not answered yet: the ids, and the messages as the turn holds them.
  let given: { ids: string[]; messages: Message[] } = { ids: [], messages: [] };
  return {
    /** The `steer` signal: never throws; a malformed, oversized or repeated message is dropped. */
    receive(raw: unknown): void {
      const checked = checkPayload(schemas().steer, raw);
      if (!checked.ok || messageProblem(checked.value.text) || seen.has(checked.value.messageId)) return;
      seen.add(checked.value.messageId);
      inbox.push({ ...checked.value, at: deps.historyLength() });
    },
    /** Before a model call: the user messages it sees after everything already in the turn. */
    take(): Message[] {
      const { take, keep } = takeSteers(inbox, deps.historyLength());
      if (!take.length) return [];
      inbox = keep;
      given = { ids: take.map((s) => s.messageId), messages: take.map((s) => ({ role: 'user', content: s.text })) };
      return given.messages;
    },
    /** The model call answered, and its answer joins the turn: the messages it was given are taken. */
    answered(): void {
      taken.push(...given.ids);
      given = { ids: [], messages: [] };
    },
    /** The turn's messages without those given to a model call that never answered (they run as their own turn). */
    withoutUnanswered(messages: readonly Message[]): Message[] {
      return messages.filter((m) => !given.messages.includes(m));
    },
    /** For the turn's result: the messageIds its model calls answered after (the session drops them from its queue). */
    steered(): { steered?: string[] } {
      return taken.length ? { steered: [...taken] } : {};
    },
  };
}

/** What became of one message (the `messageTurn` query): the turn it started or steered, its refusal, or its place in the queue. */
export function messageTurnIn(
  s: { turns: readonly TurnSummary[]; pending: readonly QueuedMessage[]; refused?: readonly RefusedMessage[] },
  messageId: string,
): MessageTurn {
  const turn = [...s.turns].reverse().find((t) => t.messageId === messageId || t.steered?.includes(messageId));
  const refused = turn ? undefined : [...(s.refused ?? [])].reverse().find((r) => r.messageId === messageId);
  const waiting = s.pending.find((m) => m.messageId === messageId);
  return {
    ...(turn ? { turn } : {}),
    ...(refused ? { refused } : {}),
    queued: waiting !== undefined,
    ...(waiting?.steering !== undefined ? { steering: waiting.steering } : {}),
  };
}
