// The workflow bundle's entry point: only deterministic code may be reachable from here.
import { setWorkflowOptions } from '@temporalio/workflow';
import { session } from './session';
import { agentTurn } from './turn';

export { session, agentTurn };
export { toolNames } from './tools';

// On a versioned worker (docs/deploy.md) a turn finishes on the version that started it, whatever the
// worker's default: its history replays only on that code. A session is pinned too and moves to a new
// version itself, at continue-as-new between turns (workflows/session.ts). Unversioned workers ignore it.
setWorkflowOptions({ versioningBehavior: 'PINNED' }, agentTurn);
setWorkflowOptions({ versioningBehavior: 'PINNED' }, session);
