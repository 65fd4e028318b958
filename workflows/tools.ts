import { proxyLocalActivities } from '@temporalio/workflow';
import type { TurnActivities } from './types';

// A client asks the workers which tools they serve (client/grants.ts, before a grant): one local
// activity on whichever worker takes the task, so the answer costs one short workflow of its own
// and nothing in any session's or turn's history.

// A registry lookup: no retries worth waiting for; the client bounds the whole run.
const { listTools } = proxyLocalActivities<TurnActivities>({ startToCloseTimeout: '5 seconds' });

/** The names of the tools the worker that runs it serves now (its own and its MCP servers'). */
export async function toolNames(): Promise<string[]> {
  return listTools();
}
