// A later build of the workflows whose turn is incompatible with the first one's histories: its first
// workflow task also starts a timer, so a v1 turn replayed on it fails with a nondeterminism error. The
// versioning test (test/versioning.test.ts) runs it as v2; pinning must keep v1's turns away from it.
import { setWorkflowOptions, sleep } from '@temporalio/workflow';
import type { TurnInput, TurnResult } from '../../../workflows/types';
import { agentTurn as v1Turn, session, toolNames } from '../../../workflows';
import { pinnedWhenVersioned } from '../../../workflows/versioning';

export { session, toolNames };

/** The marker of this build in a turn's history: a timer of this many milliseconds, first. */
export const V2_TIMER_MS = 7;

export async function agentTurn(input: TurnInput): Promise<TurnResult> {
  // Started first, so the turn's handlers (status query, decisions) are there from its first task.
  const result = v1Turn(input);
  await sleep(V2_TIMER_MS);
  return result;
}
setWorkflowOptions(pinnedWhenVersioned, agentTurn);
