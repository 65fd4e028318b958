import { strict as assert } from 'node:assert';
import type { ToolContext } from '../../activities/tool';

/** What the send_email tests against the mail sink share: the tool context, the message, and a rejection catcher. */

export function ctxFor(executionId: string, signal: AbortSignal = new AbortController().signal): ToolContext {
  return {
    executionId,
    attempt: 1,
    sessionId: 'session-test',
    turn: 1,
    toolCallId: 'call-1',
    signal,
    heartbeat: () => undefined,
  };
}

export const mail = { to: 'alice@example.com', subject: 'Quarterly report', body: 'Numbers attached.\n-- bot' };

export async function rejectsWith(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new assert.AssertionError({ message: 'expected the promise to reject' });
}
