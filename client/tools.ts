import { randomUUID } from 'node:crypto';
import type { OpenWorkerClient } from './connection';
import { liveWorkers } from './workers';

// Which tools the workers serve, asked of a worker (workflows/tools.ts): the client has no list of
// its own, and a session knows only the tools its turns called. Used before a grant, so a typo or a
// tool no worker has is refused instead of standing in the session approving nothing.

/** How long a grant waits for a worker's answer before granting without the check. */
export const TOOLS_ASK_MS = 5_000;
const NAMES_SHOWN = 20;

/**
 * The tools a worker on the task queue serves now, or undefined when none answered in time (no
 * worker, or workers of a build without the `toolNames` workflow): the caller then cannot check.
 */
export async function servedTools(c: OpenWorkerClient, waitMs = TOOLS_ASK_MS): Promise<string[] | undefined> {
  if ((await liveWorkers(c).catch(() => 0)) === 0) return undefined;
  try {
    const handle = await c.client.workflow.start('toolNames', {
      workflowId: `openworker-tools-${randomUUID()}`,
      taskQueue: c.taskQueue,
      args: [],
      // An older worker without the workflow type fails its tasks until this ends the run.
      workflowExecutionTimeout: waitMs,
      staticSummary: 'Which tools the workers serve (asked before a grant)',
    });
    const names: unknown = await c.client.withDeadline(Date.now() + waitMs + 1_000, () => handle.result());
    return Array.isArray(names) && names.every((n) => typeof n === 'string') ? names : undefined;
  } catch {
    return undefined;
  }
}

/** Why a grant of `tool` names no tool the worker serves (one line), or undefined when it serves it. */
export function unlistedTool(tool: string, served: readonly string[]): string | undefined {
  if (served.includes(tool)) return undefined;
  const sorted = [...served].sort();
  const shown = sorted.slice(0, NAMES_SHOWN).join(', ');
  const more = sorted.length > NAMES_SHOWN ? ` and ${sorted.length - NAMES_SHOWN} more` : '';
  return `tool '${tool}' is not one the worker serves (${served.length ? `it serves ${shown}${more}` : 'it serves no tools'}); a grant names a tool exactly as the worker lists it`;
}
