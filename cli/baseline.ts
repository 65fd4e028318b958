import { connectClient } from '../client/connection';
import type { ConnectOptions } from '../runtime/connection';
import { resolveConnectConfig } from '../runtime/connection';
import { ensureBaseline } from '../runtime/baseline';
import { AGENT_WORKFLOW_TYPES } from '../worker/workflowModules';

// `dev` and `worker` check their state directory's baseline stamp (runtime/baseline.ts) before any
// workflow task is polled; the server is asked only when the directory has state and an older stamp.

const quoted = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/**
 * The visibility query for the runs a worker on `taskQueue` could pick up: open, of this project's
 * workflow types. A versioned worker gets no task of a run pinned to another version, so only
 * unversioned runs count for it.
 */
export function openRunsQuery(taskQueue: string, versioned: boolean): string {
  return [
    `ExecutionStatus='Running'`,
    `TaskQueue=${quoted(taskQueue)}`,
    `WorkflowType IN (${AGENT_WORKFLOW_TYPES.map(quoted).join(', ')})`,
    ...(versioned ? ['TemporalWorkerDeploymentVersion IS NULL'] : []),
  ].join(' AND ');
}

/** Refuses (throws one line) to start on a state directory whose open runs an older baseline started. */
export async function checkBaseline(
  connect: ConnectOptions & { settings: NonNullable<ConnectOptions['settings']> },
  opts: { versioned: boolean; freshStart: string },
): Promise<void> {
  const cfg = resolveConnectConfig(connect, connect.settings);
  await ensureBaseline({
    dir: connect.settings.stateDir,
    where: `task queue '${cfg.taskQueue}' (namespace ${cfg.namespace} at ${cfg.address})`,
    freshStart: opts.freshStart,
    log: (line) => console.error(line),
    countOpenRuns: async () => {
      const c = await connectClient(connect);
      try {
        return (await c.client.workflow.count(openRunsQuery(c.taskQueue, opts.versioned))).count;
      } finally {
        await c.close();
      }
    },
  });
}
