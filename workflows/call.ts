import type { CancellationScope } from '@temporalio/workflow';
import { condition, isCancellation, proxySinks, sleep } from '@temporalio/workflow';
import { answerDeadlineMs, NO_ANSWER_CANCELLED, noAnswer, questionOf } from './answers';
import { askReconcile, dispatchMarkerOf, reconcileActivityId, runAttempt } from './callActivities';
import type { FaultSinks } from './definitions';
import { awaitApproval, withEditNote } from './edits';
import type { createDecisionIntake } from './intake';
import { NOT_APPLIED_CANCELLED } from './intake';
import type { LedgerInput } from './ledger';
import { activityIdFor, attemptFence, earlierRunMayHaveApplied, isTerminal } from './ledger';
import type { CallFacts, NextStep } from './policy';
import {
  afterExecution,
  afterReconcile,
  afterRecoveryDecision,
  afterRetryReconcile,
  dispatchLearned,
  isProtected,
  retryStep,
  whenCancelled,
} from './policy';
import type { createShields } from './shields';
import { toolResultMessage } from './transcript';
import type { LedgerEntry, Message, PlannedCall, ReconcileAnswer, RecoverSignal, TurnInput } from './types';

/*
 * One tool call, from approval to a result the model can read: the seed's state machine.
 *
 *   awaiting_approval ─approve─▶ running ─dispatch─▶ dispatched ─result─▶ succeeded | failed
 *         │ reject                 ▲   ▲                 │ unknown outcome (timeout, crash, error)
 *         ▼                        │   │                 ├─ reconcile policy ─▶ reconciling ─ applied ─▶ succeeded
 *      rejected                    │   └── not applied ──┘                           │ unknown
 *                                  │                                                 ▼
 *                                  └──── retry, after the fence ◀── recovery_required ─▶ succeeded | failed
 *                                        then reconcile(), if any     (a person decides)
 *
 * ask_user calls take their own path: awaiting_answer ─answer─▶ succeeded, or ─deadline/cancel─▶ failed (awaitAnswer).
 *
 * The seed's "approved" is the state `running` here (it is also what an auto-approved read is in),
 * and "unknown" is an event (`outcome_unknown`) that the recovery policy turns into a state.
 * Each step asks a pure function in policy.ts what comes next; this module only runs it.
 */

const { openworkerFaults } = proxySinks<FaultSinks>();

/** A step met an impossible ledger transition; the call is parked for a person (never a task failure). */
export class InvariantParked extends Error {}

/** What a call's lifecycle needs from its turn, passed in so the story below has no hidden state. */
export interface CallContext {
  input: Pick<TurnInput, 'sessionId' | 'turn'>;
  ledger: ReadonlyMap<string, LedgerEntry>;
  /** Accepted recovery decisions, by tool call id (the intake fills it). */
  recoveries: Map<string, RecoverSignal>;
  /** Records a change; never throws (a handler's write). */
  record(toolCallId: string, change: LedgerInput): LedgerEntry;
  /** Records a change; throws InvariantParked when it was impossible (a lifecycle step's write). */
  step(toolCallId: string, change: LedgerInput): LedgerEntry;
  intake: ReturnType<typeof createDecisionIntake>;
  shields: ReturnType<typeof createShields>;
  /** The turn's root scope: cancelled once the turn is asked to cancel. */
  root: CancellationScope;
  /** The turn is a reset or a workflow-level retry of an earlier run: its dispatch markers are gone. */
  rerun?: 'reset' | 'retried';
}

export function callLifecycle(ctx: CallContext) {
  const { input, ledger, recoveries, record, step, intake, shields, root } = ctx;
  const current = (id: string): LedgerEntry => ledger.get(id)!;
  const facts = (call: PlannedCall): CallFacts => {
    const e = current(call.toolCallId);
    const spec = call.spec!;
    return {
      effect: spec.effect,
      recovery: spec.recovery,
      dispatched: e.dispatched,
      runs: e.runs,
      maxAttempts: spec.maxAttempts,
      earlierDispatch:
        (ctx.rerun !== undefined && isProtected(spec.effect, spec.recovery)) || earlierRunMayHaveApplied(e, spec),
    };
  };

  // running: one activity per run; its outcome, classified, goes to the policy.
  const execute = async (call: PlannedCall): Promise<NextStep> => {
    const activityId = activityIdFor(current(call.toolCallId).executionId, current(call.toolCallId).runs + 1);
    const entry = step(call.toolCallId, { type: 'scheduled', activityId });
    const marker = dispatchMarkerOf(call.spec!);
    openworkerFaults.reached('turn.before_schedule', entry.tool, entry.executionId);
    const outcome = await runAttempt({ turn: input, entry, call, activityId, marker, shields });
    openworkerFaults.reached('turn.after_result', entry.tool, entry.executionId);
    // The heartbeat marker is learned from the outcome.
    if (marker === 'heartbeat' && !current(call.toolCallId).dispatched && dispatchLearned(outcome))
      step(call.toolCallId, { type: 'dispatched', activityId, attempt: entry.runs }); // one attempt per run
    if (outcome.kind === 'not_started') step(call.toolCallId, { type: 'not_started', reason: outcome.reason });
    if (outcome.kind === 'unknown') {
      step(call.toolCallId, {
        type: 'outcome_unknown',
        reason: outcome.reason,
        ...(outcome.attempt ? { attempt: outcome.attempt } : {}),
        ...(outcome.phase ? { lastHeartbeatPhase: outcome.phase } : {}),
      });
    }
    return afterExecution(facts(call), outcome);
  };

  const askExternalSystem = async (call: PlannedCall): Promise<ReconcileAnswer> => {
    const activityId = reconcileActivityId(current(call.toolCallId));
    const entry = step(call.toolCallId, { type: 'reconciling', activityId });
    const answer = await askReconcile(input, entry, call, activityId);
    step(call.toolCallId, {
      type: 'reconciled',
      answer: answer.status,
      ...(answer.status === 'unknown' && answer.reason ? { reason: answer.reason } : {}),
    });
    return answer;
  };

  // reconciling: ask the external system whether the execution ID was applied.
  const reconcile = async (call: PlannedCall): Promise<NextStep> => {
    let answer = await askExternalSystem(call);
    // A timed-out attempt may still be running (a paused VM, a partition): "not applied" is only
    // believed once that attempt's start-to-close window, counted from its dispatch, has passed.
    const wait = attemptFence(current(call.toolCallId), call.spec!.startToCloseMs) - Date.now();
    if (answer.status === 'not_applied' && wait > 0) {
      await sleep(wait, { summary: `fence ${call.name} ${current(call.toolCallId).executionId} before re-asking` });
      answer = await askExternalSystem(call);
    }
    return afterReconcile(facts(call), answer);
  };

  // recovery_required: a person decides. A decided retry first waits out the last dispatched
  // attempt's window unless the decision skips the fence (a newer decision during the wait replaces
  // it), then asks reconcile() when the tool has one. `decided` names who decided a retry.
  const recoveryDecision = async (call: PlannedCall): Promise<{ next: NextStep; decided?: string }> => {
    const id = call.toolCallId;
    intake.judgeWaiting(id);
    // Who decided the retry that waits out the fence, while it waits.
    let fencedBy: string | undefined;
    try {
      for (;;) {
        await condition(() => recoveries.has(id));
        const decision = recoveries.get(id)!;
        recoveries.delete(id);
        const next = afterRecoveryDecision(decision);
        if (next.kind !== 'run') return { next };
        // Waiting out the window proves nothing about a relay or a queue: a tool that can tell is asked.
        const retry = () => ({ next: retryStep(call.spec!.hasReconcile, decision.by), decided: decision.by });
        const until = attemptFence(current(id), call.spec!.startToCloseMs);
        const wait = until - Date.now();
        if (decision.skipFence || wait <= 0) return retry();
        const attempt = current(id).attempts;
        step(id, { type: 'retry_fenced', until: new Date(until).toISOString(), attempt, by: decision.by });
        fencedBy = decision.by;
        const replaced = await condition(() => recoveries.has(id), wait, {
          summary: `fence: ${call.name} ${current(id).executionId} waits out attempt ${attempt}`,
        });
        fencedBy = undefined;
        if (!replaced) return retry();
      }
    } catch (err) {
      // Signals run before a cancel in the same task: a decision accepted then never acts. The call
      // parks anew, so nothing shows a retry still waiting (pendingFence) on a cancelled turn.
      const pending = fencedBy !== undefined ? { by: fencedBy, decision: 'retry' } : recoveries.get(id);
      if (isCancellation(err) && pending) {
        intake.notApplied(id, `${NOT_APPLIED_CANCELLED} before the decision was carried out`);
        record(id, {
          type: 'recovery_required',
          reason: `the turn was cancelled before the ${pending.decision} decided by ${pending.by} ${pending.decision === 'retry' ? 'ran' : 'was carried out'}`,
        });
      }
      throw err;
    }
  };

  // `approvedBy`: a person approved the call in the task that starts it (a cancel may overtake it there).
  const steps = async (call: PlannedCall, first: NextStep, approvedBy?: string): Promise<Message> => {
    const id = call.toolCallId;
    let next = first;
    let decided: string | undefined;
    for (;;) {
      try {
        // Once the turn is cancelled nothing new starts; a decided retry that cannot run parks anew.
        if (shields.lettingCallsFinish() || (decided !== undefined && root.consideredCancelled)) {
          const planned = next;
          next = whenCancelled(facts(call), planned);
          if (decided !== undefined && next !== planned) {
            intake.notApplied(id, `${NOT_APPLIED_CANCELLED} before the retry ran`);
            if (next.kind === 'recovery_required')
              next = { ...next, reason: `the turn was cancelled before the retry decided by ${decided} ran` };
          }
          if (approvedBy !== undefined && next !== planned)
            intake.notApplied(id, `${NOT_APPLIED_CANCELLED} before the call ran`, 'approve');
        }
        decided = undefined;
        approvedBy = undefined;
        switch (next.kind) {
          case 'run':
            next = await execute(call);
            break;
          case 'reconcile':
            next =
              next.retryDecidedBy === undefined
                ? await reconcile(call)
                : afterRetryReconcile(await askExternalSystem(call), next.retryDecidedBy);
            break;
          case 'recovery_required':
            step(id, { type: 'recovery_required', reason: next.reason });
            ({ next, decided } = await recoveryDecision(call));
            break;
          case 'succeed':
            step(id, {
              type: 'succeeded',
              result: next.result,
              via: next.via,
              ...(next.attempt ? { attempt: next.attempt } : {}),
            });
            intake.judgeWaiting(id);
            return toolResultMessage({ id, name: call.name }, { result: next.result });
          case 'fail':
            step(id, { type: 'failed', error: next.error, via: next.via });
            intake.judgeWaiting(id);
            return toolResultMessage({ id, name: call.name }, { error: next.error });
        }
      } catch (err) {
        if (!(err instanceof InvariantParked)) throw err;
        // A finished call stays finished; any other waits for a person, with the reason in its ledger.
        const e = current(id);
        if (isTerminal(e.state)) {
          intake.judgeWaiting(id);
          return toolResultMessage(
            { id, name: call.name },
            e.state === 'succeeded' ? { result: e.result } : { error: e.error ?? `not executed (${e.state})` },
          );
        }
        ({ next, decided } = await recoveryDecision(call));
      }
    }
  };

  // A call whose activity or wait was cancelled with the turn is never left looking in flight.
  const markInterrupted = (call: PlannedCall): void => {
    const e = current(call.toolCallId);
    if (e.runs === 0 || !['running', 'dispatched', 'reconciling'].includes(e.state)) return;
    if (e.effect === 'read')
      record(e.toolCallId, {
        type: 'failed',
        error: 'interrupted: the turn was cancelled while this call ran',
        via: 'execute',
      });
    else
      record(e.toolCallId, {
        type: 'recovery_required',
        reason: 'the turn was cancelled before this call’s outcome was known',
      });
  };

  // awaiting_answer (ask_user, workflows/answers.ts): no activity; the intake records the answer as the
  // result. A deadline is a durable timer; without one the call waits until answered or cancelled.
  const awaitAnswer = async (call: PlannedCall): Promise<Message> => {
    const id = call.toolCallId;
    const q = questionOf(current(id).arguments);
    const asking = () => current(id).state === 'awaiting_answer';
    try {
      const ms = answerDeadlineMs(q);
      const summary = `ask_user ${current(id).executionId} waits for an answer`;
      if (ms === undefined) await condition(() => !asking());
      else await condition(() => !asking(), ms, { summary });
    } catch (err) {
      if (isCancellation(err) && asking()) record(id, { type: 'unanswered', reason: NO_ANSWER_CANCELLED });
      throw err;
    }
    if (asking()) record(id, { type: 'unanswered', reason: noAnswer(q) });
    const e = current(id);
    return toolResultMessage(
      { id, name: call.name },
      e.state === 'succeeded' ? { result: e.result } : { error: e.error ?? 'no answer' },
    );
  };

  const lifecycle = async (call: PlannedCall, start?: NextStep): Promise<Message> => {
    const id = call.toolCallId;
    if (current(id).state === 'awaiting_answer') return awaitAnswer(call);
    await awaitApproval(call, current, intake, `${NOT_APPLIED_CANCELLED} before the edited arguments were checked`);
    if (current(id).state === 'invalid' || current(id).state === 'rejected') {
      return toolResultMessage({ id, name: call.name }, { error: current(id).error ?? 'not executed' });
    }
    const first: NextStep =
      ctx.rerun && isProtected(call.spec!.effect, call.spec!.recovery)
        ? {
            kind: 'recovery_required',
            reason: `this turn was ${ctx.rerun}: an earlier run may already have executed this call with the same execution ID`,
          }
        : (start ?? { kind: 'run', why: 'approved' });
    const who = current(id).approver;
    const approvedNow = !start && who?.kind === 'person' && current(id).runs === 0 ? who.name : undefined;
    try {
      return await steps(call, first, approvedNow);
    } catch (err) {
      if (isCancellation(err) && shields.lettingCallsFinish()) markInterrupted(call);
      throw err;
    }
  };

  const results = new Map<string, Message>();
  return {
    /** The results of the calls that finished, by tool call id (a cancel keeps them). */
    results: results as ReadonlyMap<string, Message>,
    /** Runs one call to its result: approval, then the steps above from `start` (default: run). */
    async run(call: PlannedCall, start?: NextStep): Promise<Message> {
      const message = withEditNote(await lifecycle(call, start), current(call.toolCallId));
      results.set(call.toolCallId, message);
      return message;
    },
  };
}
