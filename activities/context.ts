import { ApplicationFailure } from '@temporalio/common';
import type { ContextStore } from '../runtime/contextStore';
import { faultPoint } from './faults';
import { assistantMessage, toolCallIdsIn } from '../workflows/context';
import { FAILURE } from '../workflows/definitions';
import { assignCallIds } from '../workflows/plan';
import { unpairedToolCalls } from '../workflows/transcript';
import type { Message, ModelActivityInput, ModelStep, PlannedCall } from '../workflows/types';

// The model activity's side of transcripts by reference: read what the turn names, check the
// transcript invariant on all of it, and store the step's messages once.

type ContextInput = NonNullable<ModelActivityInput['context']>;

/** The whole transcript the model sees: the stored context, then the messages since. */
export async function readContext(store: ContextStore | undefined, input: ContextInput): Promise<Message[]> {
  if (!store)
    throw ApplicationFailure.nonRetryable(
      'this worker has no context store: create it with OpenWorkerPlugin or createWorker, which set one up from the payload store',
      FAILURE.modelError,
    );
  const messages = [...(await store.read(input.base)), ...(Array.isArray(input.append) ? input.append : [])];
  // The turn sees only its own messages; the whole transcript is checked here, before the model reads it.
  const problems = unpairedToolCalls(messages);
  if (problems.length)
    throw ApplicationFailure.nonRetryable(`transcript invariant broken: ${problems.join('; ')}`, FAILURE.modelError);
  return messages;
}

/**
 * Gives the response's calls ids no earlier call of the session used, then stores the messages
 * since the base and the step's assistant message as one segment: the turn keeps the reference.
 */
export async function storeStep(
  store: ContextStore,
  input: ContextInput,
  seen: readonly Message[],
  step: { text: string; calls: PlannedCall[]; iteration: number; at: string },
): Promise<ModelStep> {
  const calls = assignCallIds(step.calls, toolCallIdsIn(seen), step.iteration);
  const answer = assistantMessage(step.text, calls);
  // A new run of the session stores its transcript again, so no segment it reads is older than it.
  const context = input.anew
    ? await store.append(undefined, [...seen, answer])
    : await store.append(input.base, [...input.append, answer]);
  await faultPoint('model.after_context_stored', 'model', step.at);
  return { text: step.text, calls, context };
}
