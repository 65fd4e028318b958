import { randomUUID } from 'node:crypto';
import type { ClientLike } from './own';
import { asOpenWorker } from './own';
import { MAX_BATCH, MAX_RECOVERY_RESULT_BYTES } from '../workflows/decisions';
import { RECOVERY_DECISIONS } from '../workflows/protocol';
import {
  approveSignal,
  decisionsSignal,
  recoverSignal,
  rejectSignal,
  turnStatusQuery,
  turnWorkflowId,
} from '../workflows/definitions';
import { approverOf, reservedName } from '../workflows/deciders';
import { argsDigest as digestOf, executionIdFor } from '../workflows/identity';
import { pendingFence, reconcileNote } from '../workflows/ledger';
import { decisionToSign, resultDigestOf } from '../workflows/signatures';
import type {
  DecisionKind,
  DecisionRecord,
  DecisionSignature,
  LedgerEntry,
  RecoveryDecision,
} from '../workflows/types';
import type { ApproverKeyPair } from './keys';
import { signDecision } from './keys';
import type { OpenWorkerClient } from './connection';
import { activeTurn, checkSessionId, OpenWorkerError, sessionStatus, signalLimitError, turnStatus } from './session';

export interface DecisionTarget {
  sessionId: string;
  toolCallId: string;
  /** Address a specific turn; default: the session's running turn. */
  turn?: number;
  by?: string;
  /** How long to wait for the turn to confirm; 0 = only deliver the signal. Default 10 s. */
  waitMs?: number;
  /** Sign the decision with this approver key (see client/keys.ts); `by` is then the key's name. */
  key?: ApproverKeyPair;
  /** A signature made elsewhere (the approvals page signs in the browser) over what the turn will check. */
  signature?: DecisionSignature;
}

export interface DecisionOutcome {
  sessionId: string;
  toolCallId: string;
  workflowId: string;
  decisionId: string;
  /** `delivered`: the signal is in the turn's history but no worker has processed it yet. */
  outcome: 'applied' | 'ignored' | 'delivered';
  why?: string;
  /** An applied retry that first waits out the last attempt's window (until then a newer decision replaces it). */
  fence?: { until: string; attempt: number };
  /** An applied retry: whether it asks reconcile() before running again, or nothing can tell (ledger reconcileNote). */
  retryNote?: string;
}

/**
 * Who decides, checked before anything is sent: 1-200 characters, and not a name the system shows
 * where no person decided (workflows/deciders.ts). `by` undefined: `defaultApprover` (Settings.user:
 * OPENWORKER_USER, else USER).
 */
export function checkBy(
  by: string | undefined,
  defaultApprover: string,
  from = by !== undefined ? '`by`' : undefined,
): string {
  const name = by ?? defaultApprover;
  from ??= 'the default approver (OPENWORKER_USER, else USER)';
  if (typeof name !== 'string' || !name || name.length > 200)
    throw new OpenWorkerError(
      `${from} must name who decides (1-200 characters), got '${String(name).slice(0, 40)}'; set \`by\` or OPENWORKER_USER`,
      'bad_input',
    );
  const reserved = reservedName(name);
  if (reserved) throw new OpenWorkerError(`${from}: ${reserved}; set \`by\` or OPENWORKER_USER`, 'bad_input');
  return name;
}

interface OneDecision {
  kind: DecisionKind;
  toolCallId: string;
  extra: Record<string, unknown>;
}

async function send(
  c: OpenWorkerClient,
  kind: DecisionKind,
  target: DecisionTarget,
  extra: Record<string, unknown>,
): Promise<DecisionOutcome> {
  checkSessionId(target.sessionId);
  if (!target.toolCallId)
    throw new OpenWorkerError('a tool call id is required (see `openworker-temporal inbox`)', 'bad_input');
  const [one] = await sendAll(c, target, [{ kind, toolCallId: target.toolCallId, extra }]);
  return one!;
}

/** One signal for one decision (its own signal name), or one `decisions` signal for several. */
async function sendAll(
  c: OpenWorkerClient,
  target: Omit<DecisionTarget, 'toolCallId'>,
  items: OneDecision[],
): Promise<DecisionOutcome[]> {
  const sessionId = checkSessionId(target.sessionId);
  const key = target.key;
  if (key && target.by && target.by !== key.name)
    throw new OpenWorkerError(
      `\`by\` ${target.by} does not match the signing key '${key.name}': a signed decision is sent as its key's name`,
      'bad_input',
    );
  const by = key ? checkBy(key.name, c.settings.user, `the signing key's name`) : checkBy(target.by, c.settings.user);
  let turn: number;
  if (target.turn !== undefined) {
    if (!Number.isSafeInteger(target.turn) || target.turn < 1)
      throw new OpenWorkerError(`\`turn\` must be a positive integer, got ${target.turn}`, 'bad_input');
    turn = target.turn;
  } else {
    const active = await activeTurn(c, sessionId);
    if (!active) {
      // A call of a finished turn: say what became of it rather than only that nothing runs.
      const past = items.length === 1 ? await finishedCall(c, sessionId, items[0]!.toolCallId) : undefined;
      const why = past && notDecidable(past.entry, items[0]!.kind, past.workflowId);
      if (why) throw new OpenWorkerError(why, 'ignored');
      throw new OpenWorkerError(
        `session '${sessionId}' has no running turn waiting for decisions; see 'openworker-temporal show ${sessionId}'`,
        'not_found',
      );
    }
    turn = active.turn;
  }
  const workflowId = turnWorkflowId(sessionId, turn);
  const handle = c.client.workflow.getHandle(workflowId);
  const bindings = await bindTo(
    c,
    handle,
    items.map((i) => ({ kind: i.kind, sessionId, turn, toolCallId: i.toolCallId, workflowId })),
  );
  const payloads = items.map((item, i) => {
    const { argsDigest, arguments: current, ...binding } = bindings[i]!;
    const { set, ...extra } = item.extra;
    const edited = editedArguments(extra.arguments, set as Record<string, unknown> | undefined, current, workflowId);
    const payload = {
      toolCallId: item.toolCallId,
      by,
      decisionId: randomUUID(),
      ...binding,
      ...(item.kind === 'approve' && argsDigest ? { argsDigest } : {}),
      ...extra,
      ...(edited ? { arguments: edited } : {}),
    };
    // An edit is signed over its new arguments (workflows/edits.ts); the binding stays on what was seen.
    const signedDigest = edited ? digestOf(edited) : argsDigest;
    if (key) return { ...payload, signature: signFor(key, item, { ...binding, argsDigest: signedDigest }, workflowId) };
    return target.signature ? { ...payload, signature: target.signature } : payload;
  });
  const what = items.length === 1 ? items[0]!.kind : `${items.length} decisions`;
  try {
    if (items.length === 1) {
      const def =
        items[0]!.kind === 'approve' ? approveSignal : items[0]!.kind === 'reject' ? rejectSignal : recoverSignal;
      await handle.signal(def as typeof approveSignal, payloads[0] as never);
    } else {
      await handle.signal(decisionsSignal, {
        decisions: payloads.map((p, i) => ({ kind: items[i]!.kind, ...p })) as never,
      });
    }
  } catch (err) {
    throw (
      signalLimitError(
        err,
        what,
        workflowId,
        'this turn takes no more decisions: cancel it and send the message again to ask anew',
      ) ?? new OpenWorkerError(`could not deliver ${what} to ${workflowId}: ${(err as Error).message}`, 'not_found')
    );
  }
  const outcomes: DecisionOutcome[] = payloads.map((p) => ({
    sessionId,
    toolCallId: p.toolCallId,
    workflowId,
    decisionId: p.decisionId,
    outcome: 'delivered',
  }));
  const until = Date.now() + (target.waitMs ?? 10_000);
  // The turn records every decision, applied or ignored, so the sender learns which it was.
  while (Date.now() < until && outcomes.some((o) => o.outcome === 'delivered')) {
    let records: DecisionRecord[];
    let ledger: LedgerEntry[];
    try {
      ({ decisions: records, ledger } = await c.client.withDeadline(Math.min(until, Date.now() + 3000), () =>
        handle.query(turnStatusQuery),
      ));
    } catch {
      break; // no worker: the signal waits in history and is applied when one starts
    }
    for (const o of outcomes) {
      const record = records.find((d) => d.decisionId === o.decisionId);
      if (record) Object.assign(o, { outcome: record.outcome, ...(record.why ? { why: record.why } : {}) });
      // The fence is recorded in the same workflow task that applied the retry.
      const entry =
        record?.outcome === 'applied' && record.kind === 'recover'
          ? ledger.find((e) => e.toolCallId === o.toolCallId)
          : undefined;
      const fence = entry && pendingFence(entry);
      if (fence) o.fence = { until: fence.until, attempt: fence.attempt };
      const note = entry?.recoveryDecision === 'retry' ? reconcileNote(entry) : undefined;
      if (note) o.retryNote = note;
    }
    if (outcomes.some((o) => o.outcome === 'delivered')) await new Promise((r) => setTimeout(r, 150));
  }
  return outcomes;
}

interface Binding {
  executionId: string;
  /** The arguments awaiting approval, when the turn answered: what `set` edits. */
  arguments?: unknown;
  /** Known when the turn answered; sent with approve, signed with every kind. */
  argsDigest?: string;
  run?: number;
  park?: number;
}

/** The signature over what the turn will check: the call, its arguments, the decision and (recover) the park and result. */
function signFor(
  key: ApproverKeyPair,
  item: OneDecision,
  { executionId, argsDigest, park }: Binding,
  workflowId: string,
): DecisionSignature {
  if (!argsDigest) {
    throw new OpenWorkerError(
      `cannot sign: ${workflowId} did not answer (is a worker running?), and a signature covers the call's arguments, which only the turn knows; start a worker and decide again`,
      'not_found',
    );
  }
  const x = item.extra;
  return signDecision(key, {
    executionId,
    argsDigest,
    decision: decisionToSign(item.kind, x.decision, x.skipFence === true),
    ...(item.kind === 'recover' && park !== undefined ? { park } : {}),
    ...(item.kind === 'recover' ? { resultDigest: resultDigestOf(x.result) } : {}),
  });
}

/**
 * Binds the decision to the call as the ledger shows it now (its execution ID; for approve its
 * arguments' digest; for recover its run), so it cannot land on another call or a later failure.
 * Without a worker to ask, it binds to the execution ID the call must have in this turn.
 */
async function bindTo(
  c: OpenWorkerClient,
  handle: ReturnType<OpenWorkerClient['client']['workflow']['getHandle']>,
  calls: { kind: DecisionKind; sessionId: string; turn: number; toolCallId: string; workflowId: string }[],
): Promise<Binding[]> {
  let status;
  try {
    status = await c.client.withDeadline(Date.now() + 3000, () => handle.query(turnStatusQuery));
  } catch {
    return calls.map((call) => ({ executionId: executionIdFor(call.sessionId, call.turn, call.toolCallId) }));
  }
  return calls.map(({ kind, toolCallId, workflowId }) => {
    const entry = status.ledger.find((e) => e.toolCallId === toolCallId);
    if (!entry) {
      const pending = status.ledger
        .filter((e) => e.state === 'awaiting_approval' || e.state === 'recovery_required')
        .map((e) => e.toolCallId);
      throw new OpenWorkerError(
        `no tool call '${toolCallId}' in ${workflowId}${pending.length ? `; waiting there: ${pending.join(', ')}` : ''} (see 'openworker-temporal inbox')`,
        'not_found',
      );
    }
    const why = notDecidable(entry, kind, workflowId);
    if (why) throw new OpenWorkerError(why, kind === 'recover' ? 'bad_input' : 'ignored');
    return {
      executionId: entry.executionId,
      argsDigest: entry.argsDigest,
      ...(kind === 'approve' ? { arguments: entry.arguments } : {}),
      ...(kind === 'recover' && entry.runs > 0 ? { run: entry.runs } : {}),
      ...(kind === 'recover' ? { park: entry.events.filter((e) => e.type === 'recovery_required').length } : {}),
    };
  });
}

/**
 * Why a decision of `kind` cannot apply to the call as its ledger shows it (undefined: it can):
 * approve and reject answer a call awaiting approval, recover one parked in recovery_required.
 * One line naming the call's state and who decided it, so "approve" of a call that already
 * succeeded says so instead of sending a signal the turn can only ignore.
 */
export function notDecidable(
  entry: Pick<LedgerEntry, 'toolCallId' | 'state' | 'approver' | 'approvedBy' | 'grantId' | 'events' | 'rejectedBy'>,
  kind: DecisionKind,
  workflowId: string,
): string | undefined {
  const call = `call '${entry.toolCallId}'`;
  if (kind === 'recover')
    return entry.state === 'recovery_required'
      ? undefined
      : `${call} is ${entry.state}, not recovery_required: a recovery decision answers a parked call (see 'openworker-temporal inbox')`;
  if (entry.state === 'awaiting_approval') return undefined;
  const a = approverOf(entry);
  const auto = { policy: 'approved by its policy', grant: 'approved by a standing approval', import: 'imported' };
  const approved = !a ? 'approved' : a.kind === 'person' ? `approved by ${a.name}` : auto[a.why];
  const what: Record<Exclude<LedgerEntry['state'], 'awaiting_approval'>, string> = {
    succeeded: `already succeeded (${approved})`,
    failed: `already ran and failed (${approved})`,
    rejected: `was already rejected${entry.rejectedBy ? ` by ${entry.rejectedBy}` : ''}`,
    running: `is already ${approved} and running`,
    dispatched: `is already ${approved} and dispatched`,
    reconciling: `is already ${approved} and reconciling`,
    invalid: 'is invalid (the model gave arguments the tool does not take), so it never runs',
    recovery_required: 'is recovery_required: it takes a recovery decision (retry, succeeded or failed)',
    awaiting_answer: `asks a question: answer it with 'openworker-temporal answer'`,
  };
  return `${call} in ${workflowId} ${what[entry.state]}: there is nothing to ${kind}`;
}

const PAST_TURNS_SEARCHED = 20;

/** The call in one of the session's latest finished turns, newest first; undefined if none has it. */
async function finishedCall(
  c: OpenWorkerClient,
  sessionId: string,
  toolCallId: string,
): Promise<{ entry: LedgerEntry; workflowId: string } | undefined> {
  const s = await sessionStatus(c, sessionId).catch(() => undefined);
  for (const t of [...(s?.turns ?? [])].reverse().slice(0, PAST_TURNS_SEARCHED)) {
    const entry = (await turnStatus(c, t.workflowId).catch(() => undefined))?.ledger.find(
      (e) => e.toolCallId === toolCallId,
    );
    if (entry) return { entry, workflowId: t.workflowId };
  }
  return undefined;
}

/** What an approval may change of the call's arguments (approve with edits, docs/approvals.md). */
export interface ArgumentEdits {
  /** Run the call with these arguments instead; the tool's schema checks them before anything runs. */
  arguments?: Record<string, unknown>;
  /** Change these top-level fields of the arguments awaiting approval (the rest stay). */
  set?: Record<string, unknown>;
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** The edited arguments an approval sends, or undefined for a plain approval. */
function editedArguments(
  args: unknown,
  set: Record<string, unknown> | undefined,
  current: unknown,
  workflowId: string,
): Record<string, unknown> | undefined {
  if (args !== undefined) return args as Record<string, unknown>;
  if (set === undefined) return undefined;
  if (!isObject(current))
    throw new OpenWorkerError(
      `cannot apply \`set\`: ${workflowId} did not answer with the call's arguments (is a worker running?); give the whole \`arguments\` instead`,
      'not_found',
    );
  return { ...current, ...set };
}

function checkEdits(t: ArgumentEdits): Record<string, unknown> {
  if (t.arguments !== undefined && t.set !== undefined)
    throw new OpenWorkerError('give either `arguments` or `set`, not both', 'bad_input');
  if (t.arguments !== undefined && !isObject(t.arguments))
    throw new OpenWorkerError(
      `\`arguments\` must be a JSON object (the tool's arguments), got ${Array.isArray(t.arguments) ? 'an array' : t.arguments === null ? 'null' : typeof t.arguments}`,
      'bad_input',
    );
  if (t.set !== undefined && (!isObject(t.set) || !Object.keys(t.set).length))
    throw new OpenWorkerError('`set` must name at least one field to change (key=value)', 'bad_input');
  return { ...(t.arguments !== undefined ? { arguments: t.arguments } : {}), ...(t.set ? { set: t.set } : {}) };
}

export const approve = async (
  client: ClientLike,
  t: DecisionTarget & { argsDigest?: string } & ArgumentEdits,
): Promise<DecisionOutcome> =>
  send(asOpenWorker(client), 'approve', t, { ...(t.argsDigest ? { argsDigest: t.argsDigest } : {}), ...checkEdits(t) });

export const reject = (client: ClientLike, t: DecisionTarget & { reason?: string }): Promise<DecisionOutcome> =>
  send(asOpenWorker(client), 'reject', t, t.reason ? { reason: t.reason } : {});

/**
 * Approves several calls of one turn with one signal (one history event, one workflow task), e.g.
 * every call of a model response. Each is bound and judged as if approved alone.
 */
export function approveAll(
  client: ClientLike,
  t: Omit<DecisionTarget, 'toolCallId'> & { toolCallIds: string[] },
): Promise<DecisionOutcome[]> {
  const c = asOpenWorker(client);
  const ids = [...new Set(t.toolCallIds)];
  if (!ids.length)
    throw new OpenWorkerError('name at least one tool call to approve (see `openworker-temporal inbox`)', 'bad_input');
  if (ids.length > MAX_BATCH)
    throw new OpenWorkerError(`at most ${MAX_BATCH} calls in one approval, got ${ids.length}`, 'bad_input');
  return sendAll(
    c,
    t,
    ids.map((toolCallId) => ({ kind: 'approve', toolCallId, extra: {} })),
  );
}

export function recover(
  client: ClientLike,
  t: DecisionTarget & { decision: RecoveryDecision; result?: unknown; reason?: string; skipFence?: boolean },
): Promise<DecisionOutcome> {
  const c = asOpenWorker(client);
  if (t.skipFence && t.decision !== 'retry')
    throw new OpenWorkerError('`skipFence` only goes with `decision` retry', 'bad_input');
  if (!RECOVERY_DECISIONS.includes(t.decision))
    throw new OpenWorkerError(
      `\`decision\` must be one of ${RECOVERY_DECISIONS.join(', ')}, got '${t.decision}'`,
      'bad_input',
    );
  if (t.result !== undefined && t.decision !== 'succeeded')
    throw new OpenWorkerError('`result` only goes with `decision` succeeded', 'bad_input');
  const bytes = t.result === undefined ? 0 : Buffer.byteLength(JSON.stringify(t.result) ?? '');
  if (bytes > MAX_RECOVERY_RESULT_BYTES)
    throw new OpenWorkerError(
      `\`result\` is ${bytes} bytes; at most ${MAX_RECOVERY_RESULT_BYTES}: give a summary, or where to find the rest`,
      'bad_input',
    );
  return send(c, 'recover', t, {
    decision: t.decision,
    ...(t.result !== undefined ? { result: t.result } : {}),
    ...(t.reason ? { reason: t.reason } : {}),
    ...(t.skipFence ? { skipFence: true } : {}),
  });
}
