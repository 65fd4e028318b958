import { randomBytes } from 'node:crypto';
import type { ClientLike } from './own';
import { asOpenWorker } from './own';
import { WorkflowNotFoundError } from '@temporalio/client';
import {
  grantSignal,
  revokeSignal,
  sessionStatusQuery,
  sessionWorkflowId,
  turnStatusQuery,
  turnWorkflowId,
} from '../workflows/definitions';
import type { Grant } from '../workflows/types';
import { MAX_TARGET } from '../workflows/grants';
import type { OpenWorkerClient } from './connection';
import type { DecisionOutcome, DecisionTarget } from './decisions';
import { approve, checkBy } from './decisions';
import {
  activeTurn,
  checkSessionId,
  checkTurn,
  OpenWorkerError,
  queryWithDeadline,
  sessionStatus,
  SESSION_FULL,
  signalLimitError,
} from './session';
import { showSession } from './inspect';
import { servedTools, unlistedTool } from './tools';

export interface GrantOutcome {
  sessionId: string;
  grant: Grant;
  /** `delivered`: in the session's history, not yet processed (no worker running). */
  outcome: 'applied' | 'delivered';
}

export interface GrantView extends Grant {
  /** The calls this grant approved: "which grant let which call through". */
  approved: { turn: number; toolCallId: string; executionId: string; target?: string }[];
}

const NAME = /^[A-Za-z0-9_.:-]{1,200}$/;

async function signalSession(
  c: OpenWorkerClient,
  sessionId: string,
  send: (h: ReturnType<OpenWorkerClient['client']['workflow']['getHandle']>) => Promise<void>,
): Promise<void> {
  const handle = c.client.workflow.getHandle(sessionWorkflowId(sessionId));
  try {
    await send(handle);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError)
      throw new OpenWorkerError(
        `session '${sessionId}' not found or ended; grants live in a running session`,
        'not_found',
      );
    throw signalLimitError(err, 'the grant change', handle.workflowId, SESSION_FULL) ?? err;
  }
}

/**
 * Waits (bounded) until the session lists the grant in the wanted form. Undefined: no worker
 * answered (the signal waits in history); a worker that answered without the change refused it.
 */
async function confirmed(
  c: OpenWorkerClient,
  sessionId: string,
  ok: (grants: Grant[]) => Grant | undefined,
  waitMs: number,
  what: string,
): Promise<Grant | undefined> {
  const until = Date.now() + waitMs;
  const handle = c.client.workflow.getHandle(sessionWorkflowId(sessionId));
  let answered = false;
  while (Date.now() < until) {
    try {
      const s = await c.client.withDeadline(Math.min(until, Date.now() + 3000), () => handle.query(sessionStatusQuery));
      answered = true;
      const g = ok(s.grants ?? []);
      if (g) return g;
    } catch {
      if (!answered) return undefined;
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  if (answered)
    throw new OpenWorkerError(
      `session '${sessionId}' did not apply the ${what} within ${waitMs / 1000}s; see 'openworker-temporal grants ${sessionId}'`,
      'failed',
    );
  return undefined;
}

/** A grant refused because no worker lists the tool; `served` is what the worker answered. */
export class UnlistedToolError extends OpenWorkerError {
  constructor(
    message: string,
    readonly served: string[],
  ) {
    super(message, 'bad_input');
  }
}

/**
 * Adds a standing approval to a session: later calls of `tool` (to `target`, if given) need no
 * approval. A worker is asked first which tools it serves, and a tool it does not list is refused
 * (UnlistedToolError); `unlisted: true` grants it anyway, e.g. an MCP server's tool that a worker
 * lists only later. Without a worker to answer (within a few seconds) the grant is made unchecked.
 */
export async function grant(
  client: ClientLike,
  input: { sessionId: string; tool: string; target?: string; by?: string; waitMs?: number; unlisted?: boolean },
): Promise<GrantOutcome> {
  const c = asOpenWorker(client);
  const sessionId = checkSessionId(input.sessionId);
  if (typeof input.tool !== 'string' || !NAME.test(input.tool))
    throw new OpenWorkerError(`invalid tool name '${input.tool}'; give the tool's name, e.g. send_email`, 'bad_input');
  if (input.target !== undefined && (typeof input.target !== 'string' || !input.target || input.target.length > 200)) {
    throw new OpenWorkerError(
      '`target` must be 1-200 characters (the exact target, e.g. bob@example.com)',
      'bad_input',
    );
  }
  if (input.target !== undefined && input.target.length >= MAX_TARGET) {
    throw new OpenWorkerError(
      `a target of ${MAX_TARGET} or more characters is cut in the ledger and cannot be granted exactly; grant the tool for the session instead`,
      'bad_input',
    );
  }
  const by = checkBy(input.by, c.settings.user);
  if (!input.unlisted) {
    const served = await servedTools(c);
    const problem = served && unlistedTool(input.tool, served);
    if (problem) throw new UnlistedToolError(problem, served);
  }
  const payload = {
    grantId: `g-${randomBytes(4).toString('hex')}`,
    tool: input.tool,
    ...(input.target ? { target: input.target } : {}),
    by,
  };
  await signalSession(c, sessionId, (h) => h.signal(grantSignal, payload));
  const g = await confirmed(
    c,
    sessionId,
    (gs) => gs.find((x) => x.id === payload.grantId),
    input.waitMs ?? 10_000,
    'grant',
  );
  return g
    ? { sessionId, grant: g, outcome: 'applied' }
    : {
        sessionId,
        grant: {
          id: payload.grantId,
          tool: payload.tool,
          ...(payload.target ? { target: payload.target } : {}),
          by: payload.by,
          at: new Date().toISOString(),
        },
        outcome: 'delivered',
      };
}

/** Revokes a grant; calls it already approved stay approved. */
export async function revoke(
  client: ClientLike,
  input: { sessionId: string; grantId: string; by?: string; waitMs?: number },
): Promise<GrantOutcome> {
  const c = asOpenWorker(client);
  const sessionId = checkSessionId(input.sessionId);
  const by = checkBy(input.by, c.settings.user);
  const s = await sessionStatus(c, sessionId);
  const existing = (s.grants ?? []).find((g) => g.id === input.grantId);
  if (!existing) {
    const ids = (s.grants ?? []).filter((g) => !g.revokedAt).map((g) => g.id);
    throw new OpenWorkerError(
      `no grant '${input.grantId}' in session '${sessionId}'${ids.length ? `; active: ${ids.join(', ')}` : '; it has no active grants'}`,
      'not_found',
    );
  }
  if (existing.revokedAt) return { sessionId, grant: existing, outcome: 'applied' };
  await signalSession(c, sessionId, (h) => h.signal(revokeSignal, { grantId: input.grantId, by }));
  const g = await confirmed(
    c,
    sessionId,
    (gs) => gs.find((x) => x.id === input.grantId && x.revokedAt),
    input.waitMs ?? 10_000,
    'revoke',
  );
  return { sessionId, grant: g ?? existing, outcome: g ? 'applied' : 'delivered' };
}

/** Every grant of the session, with the calls each one approved. */
export async function listGrants(client: ClientLike, sessionId: string): Promise<GrantView[]> {
  const c = asOpenWorker(client);
  const v = await showSession(c, sessionId);
  const s = await sessionStatus(c, sessionId);
  return (s.grants ?? []).map((g) => ({
    ...g,
    approved: v.executions
      .filter((e) => e.grantId === g.id)
      .map((e) => ({
        turn: e.turn,
        toolCallId: e.toolCallId,
        executionId: e.executionId,
        ...(e.target ? { target: e.target } : {}),
      })),
  }));
}

/**
 * Approves a call and grants its tool for the rest of the session (`always: 'session'`) or its
 * tool for this exact target (`always: 'target'`).
 */
export async function approveAlways(
  client: ClientLike,
  t: DecisionTarget & { argsDigest?: string; always: 'session' | 'target' },
): Promise<DecisionOutcome & { grant?: GrantOutcome }> {
  const c = asOpenWorker(client);
  const sessionId = checkSessionId(t.sessionId);
  if (t.key) checkBy(t.key.name, c.settings.user, `the signing key's name`);
  else checkBy(t.by, c.settings.user);
  const turn = t.turn !== undefined ? checkTurn(t.turn) : (await activeTurn(c, sessionId))?.turn;
  if (!turn)
    throw new OpenWorkerError(
      `session '${sessionId}' has no running turn waiting for decisions; see 'openworker-temporal show ${sessionId}'`,
      'not_found',
    );
  const workflowId = turnWorkflowId(sessionId, turn);
  const handle = c.client.workflow.getHandle(workflowId);
  const status = await queryWithDeadline(c, `turn ${workflowId}`, handle, () => handle.query(turnStatusQuery));
  const entry = status.ledger.find((e) => e.toolCallId === t.toolCallId);
  if (!entry)
    throw new OpenWorkerError(
      `no tool call '${t.toolCallId}' in ${workflowId} (see 'openworker-temporal inbox')`,
      'not_found',
    );
  if (t.always === 'target' && !entry.target) {
    throw new OpenWorkerError(
      `${entry.tool} call '${t.toolCallId}' names no target; use \`always\` session to allow the tool for the whole session`,
      'bad_input',
    );
  }
  const decision = await approve(c, { ...t, turn });
  // No standing approval from a decision that did not take.
  if (decision.outcome === 'ignored') return decision;
  const g = await grant(c, {
    sessionId,
    tool: entry.tool,
    // The tool's name comes from the worker's own ledger entry: nothing to ask.
    unlisted: true,
    ...(t.always === 'target' ? { target: entry.target } : {}),
    // A signed approval is sent as its key's name: its grant is recorded under the same name.
    ...(t.key ? { by: t.key.name } : t.by ? { by: t.by } : {}),
  });
  return { ...decision, grant: g };
}
