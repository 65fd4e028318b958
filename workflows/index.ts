// The workflow bundle's entry point: only deterministic code may be reachable from here.
import { setWorkflowOptions } from '@temporalio/workflow';
import { session } from './session';
import { agentTurn } from './turn';
import { pinnedWhenVersioned } from './versioning';

export { session, agentTurn };
export { toolNames } from './tools';
export { scheduledTurn } from './scheduledTurn';

setWorkflowOptions(pinnedWhenVersioned, agentTurn);
setWorkflowOptions(pinnedWhenVersioned, session);
