import {
  CancellationScope,
  allHandlersFinished,
  condition,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxySinks,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { LedgerInput } from './ledger';
import { activityIdFor, applyLedgerSafely, attemptFence, isTerminal, liveTurnState, newEntry } from './ledger';
import type { CallFacts, ExecutionOutcome, NextStep } from './policy';
import { afterExecution, afterReconcile, afterRecoveryDecision, attemptsPerRun, isProtected, whenCancelled } from './policy';
import { createShields } from './shields';
import { NOT_APPLIED_CANCELLED, createDecisionIntake } from './intake';
import { handleDispatch, handleGrants } from './turnHandlers';
import type { FaultSinks } from './definitions';
import { approveSignal, decisionsSignal, recoverSignal, rejectSignal, turnStatusQuery, OpenWorkerState, DEFAULT_MAX_ITERATIONS, NOT_STARTED, UNKNOWN_FINAL } from './definitions';
import { NOT_APPLIED_TYPES, classifyToolFailure, messageOf } from './failures';
import { executionIdFor } from './identity';
import { importedEntry } from './imported';
import { assignCallIds } from './plan';
import { MESSAGE_LIMIT_PATCH, oversizedMessage } from './limits';
import { toolResultMessage, unpairedToolCalls } from './transcript';
import { renderDetails } from './details';
import type {
  DecisionRecord,
  ImportedCall,
  LedgerEntry,
  Message,
  PlannedCall,
  ReconcileActivityResult,
  RecoverSignal,
  ToolActivityInput,
  TurnActivities,
  TurnInput,
  TurnResult,
  TurnState,
  ToolCall,
  TurnStatus,
} from './types';

// The model may be slow; retry transient failures, never a ModelError (bad request, script exhausted).
// The activity heartbeats every 2 s: a model call on a worker that died is retried after 10 s
// (npm run bench saw 61 s stalls in scale-out with a 1-minute heartbeat timeout).
const { callModel } = proxyActivities<TurnActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1s', maximumInterval: '30s', maximumAttempts: 5, nonRetryableErrorTypes: ['ModelError'] },
});

// Tool activities get per-call options (activity ID, summary, timeouts, retry) from the tool's spec.
const { executeTool } = proxyActivities<TurnActivities>({ startToCloseTimeout: '2 minutes' });

// Looking tools up in the worker's registry, for calls imported from another runtime.
const { planToolCalls } = proxyActivities<TurnActivities>({ startToCloseTimeout: '30 seconds' });

// Asking the external system is read-only, so ordinary retries are safe.
const { reconcileTool } = proxyActivities<TurnActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', maximumAttempts: 3 },
});

/** Changes that alter history, each behind patched() so turns started by older builds replay. */
const PATCHES = {
  reconcileFence: 'reconcile-fence-v1',
  idsUniquePerSession: 'tool-call-ids-unique-per-session-v1',
  workflowRetryGuard: 'workflow-retry-guard-v1',
  cancelSettlesCalls: 'cancel-settles-in-flight-calls-v1',
  grantsAfterResponse: 'grants-after-pending-response-v1',
  messageLimit: MESSAGE_LIMIT_PATCH,
  recoveryResultLimit: 'recovery-result-limit-v1',
  retryFence: 'recovery-retry-fence-v1',
  revokeWhilePending: 'revoke-during-pending-response-v1',
} as const;

/** A lifecycle step met an impossible ledger transition; the call is parked for a person (never a task failure). */
class InvariantParked extends Error {}

const { openworkerFaults } = proxySinks<FaultSinks>();

/** One agent turn: model → validate → approve → execute → results → model …, with a ledger per tool call. */
export async function agentTurn(input: TurnInput): Promise<TurnResult> {
  const maxIterations = input.options?.maxIterations ?? DEFAULT_MAX_ITERATIONS;
  const ledger = new Map<string, LedgerEntry>();
  const decisions: DecisionRecord[] = [];
  const recoveries = new Map<string, RecoverSignal>();
  const messages: Message[] = input.message !== undefined ? [{ role: 'user', content: input.message }] : [];
  // The calls of the response being worked on: each must get a result, even when the turn is cancelled.
  let openCalls: ToolCall[] = (input.resume ?? []).map((r) => r.call);
  let iteration = 0;
  let finished: { state: TurnState; text?: string; error?: string } | undefined;
  let published: TurnState | undefined;

  const now = (): string => new Date().toISOString();
  const info = workflowInfo();
  // A reset or a workflow-level retry starts a new run of the same turn: its execution IDs repeat
  // but its dispatch markers are gone. Turns are started without a retry policy; this guards
  // against one set from outside.
  const rerun =
    info.attempt > 1 && patched(PATCHES.workflowRetryGuard) ? 'retried'
    : info.runId !== info.firstExecutionRunId && !info.continuedFromExecutionRunId ? 'reset'
    : undefined;
  const entries = (): LedgerEntry[] => [...ledger.values()];
  // A cancel lets external tool activities in flight finish (or park) before the turn ends.
  const shields = createShields(() => patched(PATCHES.cancelSettlesCalls));
  let inFlight: Promise<Message>[] = [];
  const state = (): TurnState => finished?.state ?? liveTurnState(entries());
  const status = (): TurnStatus => ({
    sessionId: input.sessionId,
    turn: input.turn,
    state: state(),
    iteration,
    ledger: entries(),
    decisions,
    ...(finished?.text !== undefined ? { text: finished.text } : {}),
    ...(finished?.error !== undefined ? { error: finished.error } : {}),
  });

  // Keep the search attribute and the UI's current details in step with the ledger.
  const publish = (): void => {
    const s = state();
    if (s !== published) {
      upsertSearchAttributes([{ key: OpenWorkerState, value: s }]);
      published = s;
    }
    setCurrentDetails(renderDetails(status()));
  };

  // Never throws: an impossible transition is logged, audited and parks the call (applyLedgerSafely).
  const recordChecked = (toolCallId: string, change: LedgerInput): { entry: LedgerEntry; violation?: string } => {
    const entry = ledger.get(toolCallId);
    if (!entry) throw new Error(`ledger: no entry for ${toolCallId}`);
    const next = applyLedgerSafely(entry, change, now());
    if (next.violation) log.error(`ledger invariant violated for ${entry.executionId}: ${next.violation}; the call waits for a person`, { toolCallId, attempted: change.type, from: entry.state });
    ledger.set(toolCallId, next.entry);
    publish();
    return next;
  };
  const record = (toolCallId: string, change: LedgerInput): LedgerEntry => recordChecked(toolCallId, change).entry;
  // In a call's lifecycle a violation also stops the step that met it (see steps()).
  const step = (toolCallId: string, change: LedgerInput): LedgerEntry => {
    const { entry, violation } = recordChecked(toolCallId, change);
    if (violation) throw new InvariantParked(violation);
    return entry;
  };
  const root = CancellationScope.current();

  const intake = createDecisionIntake({
    ledger,
    recoveries,
    decisions,
    record,
    publish,
    now,
    resultLimitApplies: () => patched(PATCHES.recoveryResultLimit),
    cancelled: () => root.consideredCancelled,
  });
  const decide = intake.decide;

  setHandler(approveSignal, (p) => decide('approve', p), { description: 'Approve a tool call: { toolCallId, by, argsDigest?, decisionId? }' });
  setHandler(rejectSignal, (p) => decide('reject', p), { description: 'Reject a tool call: { toolCallId, by, reason?, decisionId? }' });
  setHandler(decisionsSignal, (p) => intake.decideMany(p), { description: 'Several decisions at once: { decisions: [{ kind: approve|reject|recover, toolCallId, by, … }] }' });
  setHandler(recoverSignal, (p) => decide('recover', p), {
    description: 'Resolve a recovery_required call: { toolCallId, decision: retry|succeeded|failed, result?, reason?, by }',
  });
  const grantIntake = handleGrants({
    input,
    ledger,
    record,
    holdWhilePending: () => patched(PATCHES.grantsAfterResponse),
    revokeWhilePending: () => patched(PATCHES.revokeWhilePending),
  });

  setHandler(turnStatusQuery, status, { description: 'The turn state, its ledger and every decision received' });

  handleDispatch({ entries, record, reached: (e) => openworkerFaults.reached('turn.dispatch', e.tool, e.executionId) });

  const facts = (entry: LedgerEntry, call: PlannedCall): CallFacts => ({
    effect: call.spec!.effect,
    recovery: call.spec!.recovery,
    dispatched: entry.dispatched,
    runs: entry.runs,
    maxAttempts: call.spec!.maxAttempts,
  });

  const activityInput = (entry: LedgerEntry, call: PlannedCall): ToolActivityInput => {
    const spec = call.spec!;
    return {
      sessionId: input.sessionId,
      turn: input.turn,
      toolCallId: entry.toolCallId,
      executionId: entry.executionId,
      tool: entry.tool,
      arguments: entry.arguments,
      attemptBase: (entry.runs - 1) * attemptsPerRun(spec.effect, spec.recovery, spec.maxAttempts),
      protect: isProtected(spec.effect, spec.recovery),
      ...(firstScheduled(entry) ? { firstScheduledAt: firstScheduled(entry) } : {}),
    };
  };

  const summary = (entry: LedgerEntry, what: string): string =>
    `${what} ${entry.tool} ${entry.executionId}${entry.target ? ` → ${entry.target}` : ''}`.slice(0, 190);

  const execute = async (call: PlannedCall): Promise<NextStep> => {
    const spec = call.spec!;
    let entry = ledger.get(call.toolCallId)!;
    const activityId = activityIdFor(entry.executionId, entry.runs + 1);
    entry = step(call.toolCallId, { type: 'scheduled', activityId });
    const protect = isProtected(spec.effect, spec.recovery);
    let outcome: ExecutionOutcome;
    openworkerFaults.reached('turn.before_schedule', entry.tool, entry.executionId);
    try {
      const schedule = () =>
        executeTool.executeWithOptions(
        {
          activityId,
          summary: summary(entry, 'execute'),
          startToCloseTimeout: spec.startToCloseMs,
          heartbeatTimeout: spec.heartbeatMs,
          retry: protect
            ? { maximumAttempts: 1 }
            : { maximumAttempts: spec.maxAttempts, initialInterval: '1s', maximumInterval: '30s', nonRetryableErrorTypes: [...NOT_APPLIED_TYPES, UNKNOWN_FINAL, NOT_STARTED] },
        },
        [activityInput(entry, call)],
      );
      const r = spec.effect === 'external' ? await shields.run(schedule) : await schedule();
      outcome = { kind: 'succeeded', result: r.result, attempt: r.attempt };
    } catch (err) {
      if (isCancellation(err)) throw err;
      outcome = classifyToolFailure(err);
    }
    openworkerFaults.reached('turn.after_result', entry.tool, entry.executionId);
    if (outcome.kind === 'not_started') step(call.toolCallId, { type: 'not_started', reason: outcome.reason });
    if (outcome.kind === 'unknown') {
      step(call.toolCallId, {
        type: 'outcome_unknown',
        reason: outcome.reason,
        ...(outcome.attempt ? { attempt: outcome.attempt } : {}),
        ...(outcome.phase ? { lastHeartbeatPhase: outcome.phase } : {}),
      });
    }
    return afterExecution(facts(ledger.get(call.toolCallId)!, call), outcome);
  };

  const askExternalSystem = async (call: PlannedCall): Promise<ReconcileActivityResult> => {
    let entry = ledger.get(call.toolCallId)!;
    const asked = entry.events.filter((e) => e.type === 'reconciling' && e.activityId !== undefined && String(e.activityId).startsWith(`${entry.executionId}-reconcile-${entry.runs}`)).length;
    const activityId = `${entry.executionId}-reconcile-${entry.runs}${asked ? `-${asked + 1}` : ''}`;
    entry = step(call.toolCallId, { type: 'reconciling', activityId });
    let answer: ReconcileActivityResult;
    try {
      answer = await reconcileTool.executeWithOptions({ activityId, summary: summary(entry, 'reconcile') }, [activityInput(entry, call)]);
    } catch (err) {
      if (isCancellation(err)) throw err;
      answer = { status: 'unknown', reason: `reconcile failed: ${messageOf(err)}` };
    }
    step(call.toolCallId, { type: 'reconciled', answer: answer.status, ...(answer.status === 'unknown' && answer.reason ? { reason: answer.reason } : {}) });
    return answer;
  };

  const reconcile = async (call: PlannedCall): Promise<NextStep> => {
    let answer = await askExternalSystem(call);
    // A timed-out attempt may still be running (a paused VM, a partition): "not applied" is only
    // believed once that attempt's start-to-close window, counted from its dispatch, has passed.
    const fence = attemptFence(ledger.get(call.toolCallId)!, call.spec!.startToCloseMs);
    const wait = fence - Date.now();
    if (answer.status === 'not_applied' && wait > 0 && patched(PATCHES.reconcileFence)) {
      await sleep(wait, { summary: `fence ${call.name} ${ledger.get(call.toolCallId)!.executionId} before re-asking` });
      answer = await askExternalSystem(call);
    }
    return afterReconcile(facts(ledger.get(call.toolCallId)!, call), answer);
  };

  const settled = new Map<string, Message>();
  const runCall = async (call: PlannedCall, start?: NextStep): Promise<Message> => {
    const message = await callLifecycle(call, start);
    settled.set(call.toolCallId, message);
    return message;
  };

  // One tool call from approval to a result the model can read.
  const callLifecycle = async (call: PlannedCall, start?: NextStep): Promise<Message> => {
    const id = call.toolCallId;
    const current = (): LedgerEntry => ledger.get(id)!;
    if (current().state === 'awaiting_approval') await condition(() => current().state !== 'awaiting_approval');
    if (current().state === 'invalid' || current().state === 'rejected') {
      return toolResultMessage({ id, name: call.name }, { error: current().error ?? 'not executed' });
    }
    const first: NextStep =
      rerun && isProtected(call.spec!.effect, call.spec!.recovery)
        ? { do: 'recovery_required', reason: `this turn was ${rerun}: an earlier run may already have executed this call with the same execution ID` }
        : start ?? { do: 'run', why: 'approved' };
    try {
      return await steps(call, first);
    } catch (err) {
      if (isCancellation(err) && shields.settling()) settleOnCancel(call);
      throw err;
    }
  };

  // A call whose activity or wait was cancelled with the turn: never left looking in flight.
  const settleOnCancel = (call: PlannedCall): void => {
    const e = ledger.get(call.toolCallId)!;
    if (e.runs === 0 || !['running', 'dispatched', 'reconciling'].includes(e.state)) return;
    if (e.effect === 'read') record(e.toolCallId, { type: 'failed', error: 'interrupted: the turn was cancelled while this call ran', via: 'execute' });
    else record(e.toolCallId, { type: 'recovery_required', reason: 'the turn was cancelled before this call’s outcome was known' });
  };

  // A person's recovery decision. A decided retry first waits out the last dispatched attempt's
  // start-to-close window (a slow system may still apply it), unless the decision skips the fence;
  // a newer decision during the wait replaces it. `decided` names who decided a retry.
  const recoveryDecision = async (call: PlannedCall): Promise<{ next: NextStep; decided?: string }> => {
    const id = call.toolCallId;
    intake.settle(id);
    let fenced = false;
    try {
      for (;;) {
        await condition(() => recoveries.has(id));
        const decision = recoveries.get(id)!;
        recoveries.delete(id);
        const next = afterRecoveryDecision(decision);
        if (next.do !== 'run') return { next };
        const until = attemptFence(ledger.get(id)!, call.spec!.startToCloseMs);
        const wait = until - Date.now();
        if (decision.skipFence || wait <= 0 || !patched(PATCHES.retryFence)) return { next, decided: decision.by };
        const attempt = ledger.get(id)!.attempts;
        step(id, { type: 'retry_fenced', until: new Date(until).toISOString(), attempt, by: decision.by });
        fenced = true;
        const replaced = await condition(() => recoveries.has(id), wait, { summary: `fence: ${call.name} ${ledger.get(id)!.executionId} waits out attempt ${attempt}` });
        fenced = false;
        if (!replaced) return { next, decided: decision.by };
      }
    } catch (err) {
      // Signals run before a cancel in the same task: a decision accepted then never acts.
      if (isCancellation(err) && (fenced || recoveries.has(id))) intake.notApplied(id, `${NOT_APPLIED_CANCELLED} before the decision was carried out`);
      throw err;
    }
  };

  const steps = async (call: PlannedCall, first: NextStep): Promise<Message> => {
    const id = call.toolCallId;
    let next = first;
    let decided: string | undefined;
    for (;;) {
      try {
        if (shields.settling() || (decided !== undefined && root.consideredCancelled)) {
          const planned = next;
          next = whenCancelled(facts(ledger.get(id)!, call), next);
          if (decided !== undefined && next !== planned) {
            intake.notApplied(id, `${NOT_APPLIED_CANCELLED} before the retry ran`);
            if (next.do === 'recovery_required') next = { ...next, reason: `the turn was cancelled before the retry decided by ${decided} ran` };
          }
        }
        decided = undefined;
        switch (next.do) {
          case 'run':
            next = await execute(call);
            break;
          case 'reconcile':
            next = await reconcile(call);
            break;
          case 'recovery_required':
            step(id, { type: 'recovery_required', reason: next.reason });
            ({ next, decided } = await recoveryDecision(call));
            break;
          case 'succeed':
            step(id, { type: 'succeeded', result: next.result, via: next.via, ...(next.attempt ? { attempt: next.attempt } : {}) });
            intake.settle(id);
            return toolResultMessage({ id, name: call.name }, { result: next.result });
          case 'fail':
            step(id, { type: 'failed', error: next.error, via: next.via });
            intake.settle(id);
            return toolResultMessage({ id, name: call.name }, { error: next.error });
        }
      } catch (err) {
        if (!(err instanceof InvariantParked)) throw err;
        // A finished call stays finished; any other waits for a person, with the reason in its ledger.
        const e = ledger.get(id)!;
        if (isTerminal(e.state)) {
          intake.settle(id);
          return toolResultMessage({ id, name: call.name }, e.state === 'succeeded' ? { result: e.result } : { error: e.error ?? `not executed (${e.state})` });
        }
        ({ next, decided } = await recoveryDecision(call));
      }
    }
  };

  // The calls an import left without a result, resolved before the first model call.
  const resumeImported = async (resume: ImportedCall[]): Promise<Message[]> => {
    const planned = await planToolCalls({ calls: resume.map((r) => r.call) });
    const at = now();
    const starts = new Map<string, NextStep>();
    planned.forEach((call, i) => {
      const { entry, park } = importedEntry(call, resume[i], executionIdFor(input.sessionId, input.turn, call.toolCallId), at);
      ledger.set(call.toolCallId, entry);
      if (park) starts.set(call.toolCallId, { do: 'recovery_required', reason: park });
    });
    grantIntake.applyGrants(planned.map((c) => c.toolCallId));
    publish();
    intake.callsCreated();
    inFlight = planned.map((c) => runCall(c, starts.get(c.toolCallId)));
    return Promise.all(inFlight);
  };

  const finish = async (f: { state: TurnState; text?: string; error?: string }): Promise<TurnResult> => {
    intake.flush();
    finished = f;
    publish();
    await condition(allHandlersFinished);
    return { ...status(), messages };
  };

  upsertSearchAttributes([{ key: OpenWorkerState, value: 'running' }]);
  published = 'running';
  try {
    // Only a raw client can start a turn with an oversized message (the session refuses them): no
    // model call, and the message stays out of the transcript.
    const tooLarge = input.message !== undefined ? oversizedMessage(input.message) : undefined;
    if (tooLarge && patched(PATCHES.messageLimit)) {
      messages.length = 0;
      return await finish({ state: 'failed', error: `${tooLarge}; the model was not called` });
    }
    // Ids from earlier turns count as used too: a provider that restarts its ids would otherwise
    // give one transcript two results for one id.
    const usedIds = new Set(
      patched(PATCHES.idsUniquePerSession) ? input.history.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []).map((c) => c.id) : [])) : [],
    );
    if (input.resume?.length) messages.push(...(await resumeImported(input.resume)));
    for (iteration = 1; ; iteration++) {
      const problems = unpairedToolCalls([...input.history, ...messages]);
      if (problems.length) return await finish({ state: 'failed', error: `transcript invariant broken: ${problems.join('; ')}` });
      let step;
      intake.modelPending(true);
      grantIntake.responsePending();
      try {
        step = await callModel({ sessionId: input.sessionId, turn: input.turn, iteration, messages: [...input.history, ...messages] });
      } catch (err) {
        if (isCancellation(err)) throw err;
        return await finish({ state: 'failed', error: `model call failed: ${messageOf(err)}` });
      } finally {
        intake.modelPending(false);
      }
      const calls = assignCallIds(step.calls, usedIds, iteration);
      openCalls = calls.map((c) => ({ id: c.toolCallId, name: c.name, arguments: c.arguments }));
      messages.push({ role: 'assistant', content: step.text, ...(calls.length ? { toolCalls: openCalls } : {}) });
      if (!calls.length) return await finish({ state: 'completed', text: step.text });
      // Calls the model could never follow up on are not executed at all.
      const capped = iteration >= maxIterations ? `not executed: the turn reached its iteration cap (${maxIterations})` : undefined;
      const at = now();
      for (const c of calls) {
        usedIds.add(c.toolCallId);
        ledger.set(c.toolCallId, newEntry(c, executionIdFor(input.sessionId, input.turn, c.toolCallId), iteration, at, capped));
      }
      grantIntake.applyGrants(calls.map((c) => c.toolCallId));
      publish();
      intake.callsCreated();
      inFlight = calls.map((c) => runCall(c));
      messages.push(...(await Promise.all(inFlight)));
      if (capped) return await finish({ state: 'failed', text: step.text, error: `iteration cap (${maxIterations}) reached; start a new turn to continue` });
    }
  } catch (err) {
    if (!isCancellation(err)) throw err;
    // Keep the transcript valid: every call of the unfinished response gets a result.
    return await CancellationScope.nonCancellable(async () => {
      if (shields.settling()) await Promise.allSettled(inFlight);
      const answered = new Set(messages.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
      for (const c of openCalls) {
        if (answered.has(c.id)) continue;
        const e = ledger.get(c.id);
        // An imported call that may have run is as unknown as one in flight.
        const unknown = e ? e.dispatched || e.state === 'recovery_required' || e.state === 'reconciling' : input.resume?.find((r) => r.call.id === c.id)?.disposition === 'recovery_required';
        messages.push(
          settled.get(c.id) ??
            toolResultMessage(c, {
              error: unknown
                ? `outcome unknown: the turn was cancelled while this call${e ? ` (execution ${e.executionId})` : ''} was in flight; check before doing it again`
                : 'interrupted: the turn was cancelled',
            }),
        );
      }
      return finish({ state: 'cancelled', error: 'turn cancelled' });
    });
  }
}

function firstScheduled(entry: LedgerEntry): number | undefined {
  const at = entry.events.find((e) => e.type === 'scheduled')?.at;
  return at ? Date.parse(at) : undefined;
}
