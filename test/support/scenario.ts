import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { OpenWorkerClient } from '../../client/connection';
import { connectClient } from '../../client/connection';
import { sendMessage, sessionStatus, turnStatus, waitForTurn } from '../../client/session';
import type { WaitedTurn } from '../../client/session';
import type { ToolCall } from '../../workflows/types';
import { ROOT } from './processes';

export const TOOLS = join(ROOT, 'test', 'fixtures', 'tools.mjs');

export const uniq = (prefix: string): string => `${prefix}-${randomUUID().slice(0, 8)}`;

/** A send_email tool call as the model would write it; the tests' mail sink receives the message. */
export const emailCall = (
  id: string,
  to = 'bob@example.com',
  message: { subject: string; body: string } = { subject: 'Hi', body: 'Hello.' },
): ToolCall => ({ id, name: 'send_email', arguments: { to, ...message } });

const scriptDir = mkdtempSync(join(tmpdir(), 'openworker-scripts-'));

/** Writes a scripted-model file and returns the `--model` spec for it. */
export function scripted(steps: { text?: string; toolCalls?: ToolCall[] }[]): string {
  const file = join(scriptDir, `${randomUUID()}.json`);
  writeFileSync(file, JSON.stringify({ steps }));
  return `scripted:${file}`;
}

export async function client(taskQueue: string): Promise<OpenWorkerClient> {
  return connectClient({ taskQueue });
}

export async function startTurn(
  c: OpenWorkerClient,
  sessionId: string,
  text: string,
  timeoutMs = 30_000,
): Promise<WaitedTurn> {
  const sent = await sendMessage(c, { sessionId, text });
  return waitForTurn(c, { sessionId, messageId: sent.messageId, timeoutMs });
}

/** Polls `fn` until it returns a truthy value; bounded. */
export async function eventually<T>(
  fn: () => Promise<T | undefined | false>,
  what: string,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `${what}: not true within ${timeoutMs} ms${last ? ` (last error: ${(last as Error).message})` : ''}`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Resolves (bounded) once a workflow task completed after the first event `isIt` matches: the worker took that event in. */
export const takenIn = (
  handle: Pick<WorkflowHandle, 'fetchHistory'>,
  isIt: (e: temporal.api.history.v1.IHistoryEvent) => boolean,
  what: string,
) =>
  eventually(async () => {
    const events = (await handle.fetchHistory()).events ?? [];
    const at = events.findIndex(isIt);
    return at >= 0 && events.slice(at).some((e) => e.workflowTaskCompletedEventAttributes);
  }, what);

/** Waits (bounded) until the turn's workflow has closed; its final status. */
export const turnClosed = (c: OpenWorkerClient, t: { workflowId: string }) =>
  eventually(
    async () => {
      const s = await turnStatus(c, t.workflowId);
      return s.closed && s;
    },
    'the turn ends',
    60_000,
  );

/** Waits (bounded) until the session records its first turn as cancelled; the session's status. */
export const sessionAfterCancel = (c: OpenWorkerClient, sessionId: string) =>
  eventually(async () => {
    const st = await sessionStatus(c, sessionId);
    return st.turns[0]?.state === 'cancelled' && st;
  }, 'the session records the cancelled turn');
