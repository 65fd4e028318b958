import { writeSync } from 'node:fs';
import type { InjectedSinks } from '@temporalio/worker';
import type { FaultSinks, WorkflowFaultPoint } from '../workflows/definitions';
import { readString } from '../runtime/config';

/**
 * Named fault points for crash tests. `OPENWORKER_FAULTS` holds a comma-separated list of
 * `point` or `point@tool`. When an armed point is reached the process reports it on stderr as
 * `OPENWORKER_FAULT <point> <executionId>` and stops making progress, so the test can SIGKILL
 * it at exactly that instant. With `OPENWORKER_FAULT_ACTION=kill` the process SIGKILLs itself
 * instead (the crash demo in the README).
 *
 * Read from the environment at each point, not once with the other settings: a process may arm a
 * point after it started (bench/worker.ts sets OPENWORKER_FAULTS on SIGUSR2), and `dev` restarts
 * its worker with the faults cleared.
 */
export type FaultPoint =
  | 'tool.before_dispatch'
  | 'tool.after_dispatch'
  | 'tool.after_execute'
  /** A model step's messages are stored, its answer not yet reported (reported as `model`, `<session>/<turn>/<iteration>`). */
  | 'model.after_context_stored'
  /** A compaction's summary is stored, the new reference not yet reported. */
  | 'model.after_summary_stored'
  /** The approvals app's notifier POSTed a park's message to one URL and heartbeated it (reported as `<executionId>:<park>`). */
  | 'notify.after_post'
  | WorkflowFaultPoint;

export const FAULT_REPORT_PREFIX = 'OPENWORKER_FAULT';

function armed(point: FaultPoint, tool: string): boolean {
  const spec = readString('OPENWORKER_FAULTS', process.env);
  if (!spec) return false;
  return spec.split(',').some((entry) => {
    const [p, t] = entry.trim().split('@');
    return p === point && (!t || t === tool);
  });
}

export async function faultPoint(point: FaultPoint, tool: string, executionId: string): Promise<void> {
  if (!armed(point, tool)) return;
  writeSync(2, `${FAULT_REPORT_PREFIX} ${point} ${executionId}\n`);
  if (readString('OPENWORKER_FAULT_ACTION', process.env) === 'kill') process.kill(process.pid, 'SIGKILL');
  await new Promise<never>(() => undefined);
}

/** The worker side of the turn's fault points: never called on replay, so only a live task stops. */
export function faultSinks(): InjectedSinks<FaultSinks> {
  return {
    openworkerFaults: {
      reached: {
        fn: (_info, point, tool, executionId) => faultPoint(point, tool, executionId),
        callDuringReplay: false,
      },
    },
  };
}
