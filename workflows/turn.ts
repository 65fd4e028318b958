import {
  CancellationScope,
  allHandlersFinished,
  condition,
  isCancellation,
  log,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { callLifecycle } from './call';
import {
  FAILURE,
  answerSignal,
  approveSignal,
  decisionsSignal,
  recoverSignal,
  rejectSignal,
  steerSignal,
  turnStatusQuery,
  turnMessagesQuery,
} from './definitions';
import { messageOf } from './failures';
import { executionIdFor } from './identity';
import { assistantMessage, contextInput, storedAtStart, turnContextRef } from './context';
import { importedEntry } from './imported';
import { createDecisionIntake } from './intake';
import { newEntry } from './ledger';
import { oversizedMessage } from './limits';
import { capReached, iterationCap } from './turnOptions';
import { DESCRIPTIONS } from './protocol';
import { createParkNotifier } from './notifyParks';
import type { NextStep } from './policy';
import { createShields } from './shields';
import { createSteeringInbox } from './steering';
import { resultsOnCancel, turnContext, unpairedToolCalls } from './transcript';
import type { TurnEnd } from './turnLedger';
import { createTurnLedger } from './turnLedger';
import { handleGrants } from './turnHandlers';
import type {
  ContextRef,
  ImportedCall,
  Message,
  PlannedCall,
  ToolCall,
  TurnActivities,
  TurnInput,
  TurnResult,
} from './types';

// The model may be slow; retry transient failures, never a ModelError (bad request, script exhausted).
// The activity heartbeats every 2 s: a model call on a worker that died is retried after 10 s
// (npm run bench saw 61 s stalls in scale-out with a 1-minute heartbeat timeout).
const { callModel, compactContext } = proxyActivities<TurnActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '1s',
    maximumInterval: '30s',
    maximumAttempts: 5,
    nonRetryableErrorTypes: [FAILURE.modelError],
  },
});

const MODEL_STEP_NOT_STORED =
  'the model call came back without its stored context: a worker of an older build ran it; run one build of the worker on this task queue';

// Looking tools up in the worker's registry, for calls imported from another runtime.
const { planToolCalls } = proxyActivities<TurnActivities>({ startToCloseTimeout: '30 seconds' });

/**
 * One agent turn: model → plan → calls → results → model …, until the model answers without tool
 * calls. Each call runs its own lifecycle (call.ts) with a ledger entry; the turn's handlers take
 * the people's decisions, the session's grants and the execute activity's dispatch marker.
 */
export async function agentTurn(input: TurnInput): Promise<TurnResult> {
  const maxIterations = iterationCap(input.options);
  let iteration = 0;
  const book = createTurnLedger(input, () => iteration);
  const { ledger, now } = book;
  const messages: Message[] = input.message !== undefined ? [{ role: 'user', content: input.message }] : [];
  // The calls of the response being worked on: each must get a result, even when the turn is cancelled.
  let openCalls: ToolCall[] = (input.resume ?? []).map((r) => r.call);
  let inFlight: Promise<Message>[] = [];
  // The transcript by reference: what the model calls have stored so far.
  let stored = storedAtStart(input.context, input.storeContextAnew === true);

  // A reset or a workflow-level retry starts a new run of the same turn: its execution IDs repeat
  // but its dispatch markers are gone. Turns are started without a retry policy; this guards
  // against one set from outside.
  const info = workflowInfo();
  const rerun =
    info.attempt > 1
      ? 'retried'
      : info.runId !== info.firstExecutionRunId && !info.continuedFromExecutionRunId
        ? 'reset'
        : undefined;
  // A cancel lets external tool activities in flight finish (or park) before the turn ends.
  const shields = createShields();
  const root = CancellationScope.current();

  // Handlers: the people's decisions, the session's grants, the status query, the dispatch marker.
  const intake = createDecisionIntake({
    ...book,
    cancelled: () => root.consideredCancelled,
  });
  setHandler(approveSignal, (p) => intake.decide('approve', p), {
    description: DESCRIPTIONS.approve,
  });
  setHandler(rejectSignal, (p) => intake.decide('reject', p), {
    description: DESCRIPTIONS.reject,
  });
  setHandler(decisionsSignal, (p) => intake.decideMany(p), {
    description: DESCRIPTIONS.decisions,
  });
  setHandler(recoverSignal, (p) => intake.decide('recover', p), {
    description: DESCRIPTIONS.recover,
  });
  // ask_user's answers (workflows/answers.ts): judged like decisions, never a task failure.
  setHandler(answerSignal, (p) => intake.answer(p), { description: DESCRIPTIONS.answer });
  const grants = handleGrants({
    input,
    ledger,
    record: book.record,
  });
  setHandler(turnStatusQuery, book.status, {
    description:
      'The turn state, its ledger and the decisions received (the latest 100 not applied; older ones counted)',
  });
  // A query adds nothing to history: older runs of this turn answer it too once a new build replays them.
  setHandler(turnMessagesQuery, () => turnContext(messages), {
    description: "This turn's messages so far: the request that started it, then the latest (12 in all)",
  });
  // Messages the user sent while this turn runs, for its next model call (workflows/steering.ts).
  const steering = createSteeringInbox({ historyLength: () => workflowInfo().historyLength });
  setHandler(steerSignal, (raw) => steering.receive(raw), { description: DESCRIPTIONS.steer });
  // Each park of a call planned with `notify` starts its notify activity (workflows/notifyParks.ts).
  const parks = createParkNotifier({
    input,
    entries: book.entries,
    record: book.record,
    cancelled: () => root.consideredCancelled,
  });
  book.onPublish(parks.check);

  const calls = callLifecycle({
    input,
    ledger,
    recoveries: book.recoveries,
    record: book.record,
    step: book.step,
    intake,
    shields,
    root,
    ...(rerun ? { rerun } : {}),
  });

  /** New ledger entries are in: grants approve what they cover, waiting decisions are judged, the calls run. */
  const runCalls = (planned: PlannedCall[], starts?: Map<string, NextStep>): Promise<Message[]> => {
    parks.watch(planned);
    // The turn publishes its state once, after grants and waiting decisions (a batch holds every
    // publish until its end): calls approved before they existed never show awaiting_approval.
    book.batch(() => {
      grants.applyGrants(planned.map((c) => c.toolCallId));
      book.publish();
      intake.callsCreated();
    });
    inFlight = planned.map((c) => calls.run(c, starts?.get(c.toolCallId)));
    return Promise.all(inFlight);
  };

  // The calls an import left without a result, resolved before the first model call.
  const resumeImported = async (resume: ImportedCall[]): Promise<Message[]> => {
    const planned = await planToolCalls({ calls: resume.map((r) => r.call) });
    const at = now();
    const starts = new Map<string, NextStep>();
    planned.forEach((call, i) => {
      const { entry, park } = importedEntry(
        call,
        resume[i],
        executionIdFor(input.sessionId, input.turn, call.toolCallId),
        at,
      );
      ledger.set(call.toolCallId, entry);
      if (park) starts.set(call.toolCallId, { kind: 'recovery_required', reason: park });
    });
    return runCalls(planned, starts);
  };

  // Older messages summarised by a model call of their own; a failure leaves the view as it was.
  const compacted = async (ref: ContextRef, at: number): Promise<ContextRef> => {
    try {
      return await compactContext({ sessionId: input.sessionId, turn: input.turn, iteration: at, context: ref });
    } catch (err) {
      if (isCancellation(err)) throw err;
      log.warn('compaction failed; the model sees the whole transcript', { error: messageOf(err) });
      const { compactDue: _due, ...kept } = ref;
      return kept;
    }
  };

  const finish = async (end: TurnEnd): Promise<TurnResult> => {
    intake.flush();
    book.end(end);
    await condition(allHandlersFinished);
    const context = turnContextRef(stored);
    // A steering message whose model call never answered is not the turn's: it runs as a turn of its own.
    const output = steering.withoutUnanswered(messages);
    return { ...book.status(), messages: output, ...(context ? { context } : {}), ...steering.steered() };
  };

  book.started();
  try {
    // Only a raw client can start a turn with an oversized message (the session refuses them): no
    // model call, and the message stays out of the transcript.
    const tooLarge = input.message !== undefined ? oversizedMessage(input.message) : undefined;
    if (tooLarge) {
      messages.length = 0;
      return await finish({ state: 'failed', error: `${tooLarge}; the model was not called` });
    }
    if (input.resume?.length) messages.push(...(await resumeImported(input.resume)));
    for (iteration = 1; ; iteration++) {
      const problems = unpairedToolCalls([...input.history, ...messages]);
      if (problems.length)
        return await finish({ state: 'failed', error: `transcript invariant broken: ${problems.join('; ')}` });
      // After every result of the previous response: the pairing holds, and the model sees them here.
      messages.push(...steering.take());
      let response;
      intake.modelPending(true);
      grants.responsePending();
      // Each message is sent and stored once: the model call gets the transcript by reference.
      if (stored.ref?.compactDue) stored = { ...stored, ref: await compacted(stored.ref, iteration) };
      try {
        response = await callModel({
          sessionId: input.sessionId,
          turn: input.turn,
          iteration,
          context: contextInput(stored, input.history, messages),
        });
      } catch (err) {
        if (isCancellation(err)) throw err;
        return await finish({ state: 'failed', error: `model call failed: ${messageOf(err)}` });
      } finally {
        intake.modelPending(false);
      }
      if (!response.context) return await finish({ state: 'failed', error: MODEL_STEP_NOT_STORED });
      steering.answered();
      // The activity gave the calls their ids, unique in the session: it sees the whole transcript.
      const planned = response.calls;
      const answer = assistantMessage(response.text, planned);
      openCalls = answer.role === 'assistant' ? (answer.toolCalls ?? []) : [];
      messages.push(answer);
      stored = { ref: response.context, history: true, upTo: messages.length };
      if (!planned.length) return await finish({ state: 'completed', text: response.text });
      // Calls the model could never follow up on are not executed at all.
      const capped =
        iteration >= maxIterations ? `not executed: the turn reached its iteration cap (${maxIterations})` : undefined;
      const at = now();
      for (const c of planned) {
        ledger.set(
          c.toolCallId,
          newEntry(c, executionIdFor(input.sessionId, input.turn, c.toolCallId), iteration, at, capped),
        );
      }
      messages.push(...(await runCalls(planned)));
      if (capped)
        return await finish({
          state: 'failed',
          text: response.text,
          error: capReached(maxIterations),
        });
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Keep the transcript valid: every call of the unfinished response gets a result.
    return await CancellationScope.nonCancellable(async () => {
      if (shields.lettingCallsFinish()) await Promise.allSettled(inFlight);
      messages.push(...resultsOnCancel({ openCalls, messages, ledger, finished: calls.results, resume: input.resume }));
      return finish({ state: 'cancelled', error: 'turn cancelled' });
    });
  }
}
