import { ApplicationFailure } from '@temporalio/common';
import type { ContextScope, ContextStore } from '../runtime/contextStore';
import { faultPoint } from './faults';
import {
  COMPACT_AT,
  DEFAULT_CONTEXT_TOKENS,
  KEEP_SHARE,
  assistantMessage,
  compactionCut,
  estimateTokens,
  modelView,
  toolCallIdsIn,
} from '../workflows/context';
import { FAILURE } from '../workflows/definitions';
import { assignCallIds } from '../workflows/plan';
import { unpairedToolCalls } from '../workflows/transcript';
import type { CompactInput, ContextRef, Message, ModelActivityInput, ModelStep, PlannedCall } from '../workflows/types';
import type { ModelProvider } from './model';

// The model activity's side of transcripts by reference: read what the turn names, check the
// transcript invariant on all of it, show the model its view (the summary, then the newer
// messages), store the step's messages once, and compact when the view nears the budget.

type ContextInput = NonNullable<ModelActivityInput['context']>;

export interface ContextDeps {
  store: ContextStore | undefined;
  /** The budget of the model's view, in tokens. */
  budget: number;
  count: (messages: readonly Message[]) => number;
}

function storeOf(deps: ContextDeps): ContextStore {
  if (!deps.store)
    throw ApplicationFailure.nonRetryable(
      'this worker has no context store: create it with OpenWorkerPlugin or createWorker, which set one up from the payload store',
      FAILURE.modelError,
    );
  return deps.store;
}

/** How a worker counts a view: the provider's tokenizer where it has one, else the estimate. */
export function contextDeps(store: ContextStore | undefined, model: ModelProvider, budget?: number): ContextDeps {
  return {
    store,
    budget: budget ?? model.contextWindow ?? DEFAULT_CONTEXT_TOKENS,
    count: (messages) => model.countTokens?.(messages) ?? estimateTokens(messages),
  };
}

/** The whole transcript (checked: every tool call has one result) and what the model sees of it. */
export async function readContext(
  deps: ContextDeps,
  input: ContextInput,
): Promise<{ messages: Message[]; view: Message[] }> {
  const store = storeOf(deps);
  const messages = [...(await store.read(input.base)), ...(Array.isArray(input.append) ? input.append : [])];
  // The turn sees only its own messages; the whole transcript is checked here, before the model reads it.
  const problems = unpairedToolCalls(messages);
  if (problems.length)
    throw ApplicationFailure.nonRetryable(`transcript invariant broken: ${problems.join('; ')}`, FAILURE.modelError);
  const summary = input.base?.summary;
  const view = summary
    ? modelView(messages, { text: await store.readSummary(summary), covers: summary.covers })
    : messages;
  return { messages, view };
}

/**
 * Gives the response's calls ids no earlier call of the session used, then stores the messages
 * since the base and the step's assistant message as one segment: the turn keeps the reference,
 * with the summary it had and a flag when the view nears the budget.
 */
export async function storeStep(
  deps: ContextDeps,
  input: ContextInput,
  seen: { messages: Message[]; view: Message[] },
  step: { text: string; calls: PlannedCall[]; iteration: number; at: string; scope: ContextScope },
): Promise<ModelStep> {
  const store = storeOf(deps);
  const calls = assignCallIds(step.calls, toolCallIdsIn(seen.messages), step.iteration);
  const answer = assistantMessage(step.text, calls);
  let summary = input.base?.summary;
  let ref: ContextRef;
  if (input.anew) {
    // A new run of the session stores its transcript again, so no segment it reads is older than it.
    ref = await store.append(undefined, [...seen.messages, answer], step.scope);
    if (summary) summary = await store.putSummary(await store.readSummary(summary), summary.covers, step.scope);
  } else ref = await store.append(input.base, [...input.append, answer], step.scope);
  const due = deps.count([...seen.view, answer]) > COMPACT_AT * deps.budget;
  const context: ContextRef = { ...ref, ...(summary ? { summary } : {}), ...(due ? { compactDue: true } : {}) };
  await faultPoint('model.after_context_stored', 'model', step.at);
  return { text: step.text, calls, context };
}

const INSTRUCTION =
  'Summarise the conversation above for your own later use: the user’s goals and requests, decisions made, ' +
  'tool calls and their results that still matter (names, ids, amounts, addresses), and what is still open. ' +
  'Be complete and concise; do not call tools.';

/**
 * Compaction: summarises the messages from the last summary up to a safe cut with one model call,
 * and stores the summary. The reference keeps every message; only what the model sees changes.
 */
export async function compact(
  deps: ContextDeps,
  model: ModelProvider,
  input: CompactInput,
  signal: AbortSignal,
  cap: (text: string) => string,
  scope: ContextScope,
): Promise<ContextRef> {
  const store = storeOf(deps);
  const { compactDue: _due, ...ref } = input.context;
  const messages = await store.read(ref);
  const from = ref.summary?.covers ?? 0;
  const cut = compactionCut(messages, from, KEEP_SHARE * deps.budget, deps.count);
  if (cut === undefined) return ref;
  const earlier = ref.summary && { text: await store.readSummary(ref.summary), covers: ref.summary.covers };
  const view = modelView(messages.slice(0, cut), earlier);
  const last = view[view.length - 1];
  const prompt: Message[] =
    last?.role === 'user'
      ? [...view.slice(0, -1), { role: 'user', content: `${last.content}\n\n${INSTRUCTION}` }]
      : [...view, { role: 'user', content: INSTRUCTION }];
  const response = await model.generate(
    { sessionId: input.sessionId, turn: input.turn, iteration: input.iteration, messages: prompt, tools: [] },
    { signal },
  );
  const text = cap(typeof response?.text === 'string' ? response.text.trim() : '');
  if (!text) return ref; // nothing to stand in for the messages: the model keeps seeing them
  const summary = await store.putSummary(text, cut, scope);
  await faultPoint('model.after_summary_stored', 'model', `${input.sessionId}/${input.turn}/${input.iteration}`);
  return { ...ref, summary };
}
