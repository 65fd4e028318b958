import type { ChildWorkflowHandle } from '@temporalio/workflow';
import {
  ApplicationFailure,
  ParentClosePolicy,
  WorkflowIdReusePolicy,
  allHandlersFinished,
  condition,
  continueAsNew,
  makeContinueAsNewFunc,
  startChild,
  setHandler,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import {
  IMPORT_MESSAGE_ID,
  grantSignal,
  grantsSignal,
  messageSignal,
  messageTurnQuery,
  revokeSignal,
  sessionStatusQuery,
  steerSignal,
  turnWorkflowId,
  wakeSignal,
  OpenWorkerSession,
  OpenWorkerState,
} from './definitions';
import { agentTurn } from './turn';
import { contextAfterTurn } from './context';
import { sessionStartProblem } from './ids';
import { DESCRIPTIONS } from './protocol';
import { closeUnpaired, unpairedToolCalls } from './transcript';
import { activeGrants, addGrant, revokeGrant } from './grants';
import { messageProblem } from './limits';
import { turnOptionsArg, turnOptionsProblem } from './turnOptions';
import { afterTurn, messageTurnIn, toSteer } from './steering';
import type {
  ContextRef,
  Grant,
  ImportInfo,
  ImportedCall,
  Message,
  MessageTurn,
  QueuedMessage,
  RefusedMessage,
  SessionInput,
  SessionStatus,
  TurnSummary,
} from './types';

const SEEN_IDS_KEPT = 1000;
const REFUSED_KEPT = 20;
/** Turns per run before continue-as-new, even if the server has not suggested it yet. */
const TURNS_PER_RUN = 100;

/**
 * A session: holds the transcript and runs each queued message as a child turn workflow,
 * one at a time. A message that arrives while a turn runs is given to that turn's next model call
 * (workflows/steering.ts); it stays queued until the turn says it took it, else it runs as a turn.
 */
export async function session(input: SessionInput): Promise<void> {
  // Only a raw start (any Temporal client) gets here with an id the client refuses, or under another
  // workflow ID: such a session would run turns under IDs that are another session's. It fails at
  // once with the reason, before it runs anything. Asked on a first run only.
  const info = workflowInfo();
  const startProblem = info.continuedFromExecutionRunId
    ? undefined
    : sessionStartProblem(info.workflowId, input?.sessionId);
  if (startProblem) throw ApplicationFailure.nonRetryable(`session refused: ${startProblem}`, 'InvalidSessionId');
  // Limits a raw start got wrong would cap every turn at once, or never (the library checks them first).
  const badStartOptions = info.continuedFromExecutionRunId ? undefined : turnOptionsProblem(input?.options);
  if (badStartOptions) throw ApplicationFailure.nonRetryable(`session refused: ${badStartOptions}`, 'BadInput');
  // With `context`, the transcript's first messages are stored by reference and `transcript` holds the rest.
  const transcript: Message[] = [...(input.transcript ?? [])];
  const turns: TurnSummary[] = [...(input.turns ?? [])];
  const pending: QueuedMessage[] = [...(input.pending ?? [])];
  const seen: string[] = [...(input.seenMessageIds ?? [])];
  let activeTurn: number | undefined;
  // The import's protocol marker stays with the session; the calls to resume only until they ran.
  const importedInfo: ImportInfo | undefined =
    input.imported && (({ resume: _resume, ...info }) => info)(input.imported);
  let turnsThisRun = 0;
  let grants: Grant[] = [...(input.grants ?? [])];
  const refused: RefusedMessage[] = [...(input.refused ?? [])];
  // The transcript's first messages as the turns stored them (#29): turns, the status query and
  // continue-as-new carry a reference to them and only the rest inline. A run that starts with one
  // has its first turn store it anew, so no segment a run reads is older than the run (payload
  // expiry, docs/deploy.md).
  let context: ContextRef | undefined = input.context;
  let storeAnew = input.context !== undefined;

  // Grants apply to calls created after them, so the running turn hears of every change, as a
  // versioned list (signals to another workflow may arrive out of order).
  let grantsVersion = 0;
  let running: ChildWorkflowHandle<typeof agentTurn> | undefined;
  const forwardGrants = (): void => {
    // A turn that just ended cannot take it; the next turn starts with the grants in its input.
    running?.signal(grantsSignal, { version: grantsVersion, grants: activeGrants(grants) }).catch(() => undefined);
  };
  // Steering: the running turn is given each message it has not been given yet.
  const steerRunning = (): void => {
    const n = activeTurn;
    const give = running && n !== undefined ? toSteer(pending, n) : [];
    if (!give.length) return;
    for (const m of give) {
      m.steering = n;
      // A turn that just ended cannot take it: the message stays queued and runs as the next turn.
      running?.signal(steerSignal, { messageId: m.messageId, text: m.text }).catch(() => undefined);
    }
  };
  const changeGrants = (next: Grant[]): void => {
    grants = next;
    grantsVersion++;
    forwardGrants();
  };
  setHandler(
    grantSignal,
    (raw) => {
      // Refused like a malformed grant (nothing changes); the library refuses it before sending.
      const r = addGrant(grants, raw, new Date().toISOString());
      if (r.ok && r.grants.length !== grants.length) changeGrants(r.grants);
    },
    { description: DESCRIPTIONS.grant },
  );
  setHandler(
    revokeSignal,
    (raw) => {
      const r = revokeGrant(grants, raw, new Date().toISOString());
      if (r.ok && r.grant.revokedAt && !grants.find((g) => g.id === r.grant.id)?.revokedAt) changeGrants(r.grants);
    },
    { description: DESCRIPTIONS.revoke },
  );

  setHandler(
    messageSignal,
    (raw) => {
      // Any Temporal client can send this; a bad payload is refused and recorded (the status shows
      // why), never allowed to wedge the session.
      const given = typeof raw?.messageId === 'string' && raw.messageId ? raw.messageId.slice(0, 200) : undefined;
      const problem = raw && typeof raw === 'object' ? messageProblem(raw.text) : 'expected { text, messageId? }';
      const refuse = (reason: string): void => {
        refused.push({ at: new Date().toISOString(), ...(given ? { messageId: given } : {}), reason });
        if (refused.length > REFUSED_KEPT) refused.splice(0, refused.length - REFUSED_KEPT);
      };
      if (problem) return refuse(problem);
      // This turn's limits (`options`), over the session's.
      const options = raw.options;
      const badOptions = turnOptionsProblem(options);
      if (badOptions) return refuse(badOptions);
      const messageId = given ?? `auto-${uuid4()}`;
      // A client that retries a send must not create a second turn.
      if (seen.includes(messageId)) return;
      seen.push(messageId);
      if (seen.length > SEEN_IDS_KEPT) seen.splice(0, seen.length - SEEN_IDS_KEPT);
      // A message with limits of its own asks for a turn of its own: it never steers the running one.
      const queue = raw.queue === true || options !== undefined;
      pending.push({
        text: raw.text as string,
        messageId,
        ...(options ? { options } : {}),
        ...(queue ? { queue: true } : {}),
      });
      steerRunning();
    },
    { description: DESCRIPTIONS.message },
  );
  setHandler(
    sessionStatusQuery,
    (): SessionStatus => ({
      sessionId: input.sessionId,
      ...(importedInfo ? { imported: importedInfo } : {}),
      grants,
      transcript,
      ...(context ? { context } : {}),
      turns,
      pending,
      ...(activeTurn ? { activeTurn } : {}),
      ...(refused.length ? { refused } : {}),
    }),
    { description: 'Transcript, turns and queued messages' },
  );
  // Nothing to do: the task it brings is enough (the loop below moves the session when its version changed).
  setHandler(wakeSignal, () => undefined, {
    description: 'Changes nothing: lets an idle session move to the current worker version (docs/deploy.md)',
  });
  setHandler(messageTurnQuery, (messageId): MessageTurn => messageTurnIn({ turns, pending, refused }, messageId), {
    description: "One message's turn, its refusal, or that it waits in the queue (a small answer, unlike `session`)",
  });

  const runTurn = async (next: { msg: QueuedMessage } | { resume: ImportedCall[] }): Promise<void> => {
    const n = (turns[turns.length - 1]?.n ?? 0) + 1;
    const workflowId = turnWorkflowId(input.sessionId, n);
    const summary: TurnSummary = {
      n,
      workflowId,
      messageId: 'msg' in next ? next.msg.messageId : IMPORT_MESSAGE_ID,
      state: 'running',
    };
    const what =
      'msg' in next
        ? next.msg.text.replace(/\s+/g, ' ').slice(0, 120)
        : `resume ${next.resume.length} imported tool call(s)`;
    turns.push(summary);
    activeTurn = n;
    turnsThisRun++;
    const sentVersion = grantsVersion;
    let steered: string[] | undefined;
    try {
      const child = await startChild(agentTurn, {
        workflowId,
        args: [
          {
            sessionId: input.sessionId,
            turn: n,
            history: transcript,
            ...(context ? { context, ...(storeAnew ? { storeContextAnew: true } : {}) } : {}),
            ...(activeGrants(grants).length ? { grants: activeGrants(grants) } : {}),
            ...(grantsVersion ? { grantsVersion } : {}),
            ...('msg' in next ? { message: next.msg.text } : { resume: next.resume }),
            ...turnOptionsArg(input.options, 'msg' in next ? next.msg.options : undefined),
          },
        ],
        // A turn ID is never reused: its execution IDs are the idempotency keys of real effects.
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        parentClosePolicy: ParentClosePolicy.TERMINATE,
        typedSearchAttributes: [
          { key: OpenWorkerSession, value: input.sessionId },
          { key: OpenWorkerState, value: 'running' },
        ],
        staticSummary: `Turn ${n} of session ${input.sessionId}: ${what}`,
      });
      running = child;
      // A change between building the input and the start could not be sent: send it now.
      if (grantsVersion !== sentVersion) forwardGrants();
      steerRunning(); // the messages that arrived before the start, or queued behind this turn's
      const result = await child.result();
      steered = result.steered;
      if (steered) summary.steered = steered;
      // Only output that keeps every tool call paired with one result may join the transcript;
      // anything else would break every later turn.
      const problems = unpairedToolCalls([...transcript, ...result.messages]);
      if (problems.length) {
        summary.state = 'failed';
        summary.error = `turn output left out of the transcript: ${problems.join('; ')}`;
      } else {
        transcript.push(...result.messages);
        const next = contextAfterTurn(context, result.context, (context?.messages ?? 0) + transcript.length);
        // The messages the new reference holds leave the session's memory.
        transcript.splice(0, (next?.messages ?? 0) - (context?.messages ?? 0));
        if (next !== context) storeAnew = false;
        context = next;
        summary.state = result.state;
        if (result.error) summary.error = result.error;
      }
    } catch (err) {
      // The turn did not finish (terminated, timed out): its partial output never reaches the transcript.
      summary.state = 'failed';
      summary.error = err instanceof Error ? err.message : String(err);
    }
    // Imported calls that the resume turn left without a result would break every later turn.
    if ('resume' in next)
      transcript.push(
        ...closeUnpaired(
          transcript,
          'outcome unknown: the turn that resumed this imported call did not finish; check before doing it again',
        ),
      );
    // Exactly what the turn's model calls saw leaves the queue (a turn that failed to report took nothing).
    pending.splice(0, pending.length, ...afterTurn(pending, steered));
    activeTurn = undefined;
    running = undefined;
  };

  if (input.imported?.resume?.length && !turns.length) await runTurn({ resume: input.imported.resume });
  // Worker Deployment Versioning (docs/deploy.md): a session is pinned like its turns; once the
  // deployment's current version is another, it moves there between turns, before it starts the next
  // one, so new turns run the new code. Never true on an unversioned worker.
  const targetChanged = (): boolean => workflowInfo().targetWorkerDeploymentVersionChanged;
  for (;;) {
    await condition(() => pending.length > 0 || workflowInfo().continueAsNewSuggested || targetChanged());
    const upgrade = targetChanged();
    if (upgrade || workflowInfo().continueAsNewSuggested || turnsThisRun >= (input.turnsPerRun ?? TURNS_PER_RUN)) {
      await condition(allHandlersFinished);
      const next = upgrade
        ? makeContinueAsNewFunc<typeof session>({ initialVersioningBehavior: 'AUTO_UPGRADE' })
        : continueAsNew<typeof session>;
      return next({
        ...input,
        ...(importedInfo ? { imported: importedInfo } : {}),
        ...(grants.length ? { grants } : {}),
        ...(refused.length ? { refused } : {}),
        ...(context ? { context } : {}),
        transcript,
        turns,
        pending,
        seenMessageIds: seen,
      });
    }
    await runTurn({ msg: pending.shift()! });
  }
}
