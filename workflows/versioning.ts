import { workflowInfo } from '@temporalio/workflow';
import type { WorkflowDefinitionOptions } from '@temporalio/common';

/**
 * Worker Deployment Versioning (docs/deploy.md): on a versioned worker a turn finishes on the version
 * that started it, whatever the worker's default, since its history replays only on that code; a
 * session is pinned too and moves itself, at continue-as-new between turns (workflows/session.ts).
 * Asked per run: an unversioned worker fails every task of a workflow that declares a behavior.
 */
export const pinnedWhenVersioned = (): WorkflowDefinitionOptions =>
  workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: 'PINNED' } : {};
