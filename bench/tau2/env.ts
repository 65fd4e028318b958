import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { TAU2_REFERENCE, tau2Installed, tau2Python, tau2Venv } from '../../dev/tau2/paths';

// The tau2 airline environment seen from Node: its tasks, its state file (dev/tau2/airline_mcp.py) and
// the reference check, all through tau2's own Python code in the venv scripts/install-tau2.mjs made.

export interface Tau2Action {
  name: string;
  arguments: Record<string, unknown>;
  /** tau2's ToolType.WRITE: changes the database. */
  write: boolean;
}
export interface Tau2Task {
  id: string;
  actions: Tau2Action[];
}
/** One write call as the server applied it (tau2 answered, or refused with an error: `ok` false). */
export interface Tau2Write {
  tool: string;
  arguments: unknown;
  executionId: string | null;
  attempt: number | null;
  ok: boolean;
  pid: number;
}

export const NOT_INSTALLED = `the tau2 airline environment is not installed in ${tau2Venv()}: run \`node scripts/install-tau2.mjs\``;

function python(args: string[]): string {
  if (!tau2Installed()) throw new Error(NOT_INSTALLED);
  const r = spawnSync(tau2Python(), [TAU2_REFERENCE, ...args], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    env: { ...process.env, LOGURU_LEVEL: 'ERROR' },
  });
  if (r.status !== 0) throw new Error(`reference.py ${args.join(' ')}: exit ${r.status}: ${r.stderr.slice(-2000)}`);
  return r.stdout;
}

/** The airline tasks whose reference actions include a write, in tasks.json order. */
export const writeTasks = (): Tau2Task[] => JSON.parse(python(['tasks'])) as Tau2Task[];

/** tau2's own comparison of the state's database with the task's reference (its actions applied once). */
export const dbMatches = (taskId: string, stateFile: string): boolean =>
  (JSON.parse(python(['check', taskId, stateFile])) as { match: boolean }).match;

/** The writes the server applied, oldest first; the state file is replaced whole, so a read sees one version. */
export const writesIn = (stateFile: string): Tau2Write[] =>
  (JSON.parse(readFileSync(stateFile, 'utf8')) as { writes: Tau2Write[] }).writes;

/** Every airline tool, true for the ones that write (tau2's ToolType). */
export const airlineTools = (): Record<string, boolean> => JSON.parse(python(['tools'])) as Record<string, boolean>;
