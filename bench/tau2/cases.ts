import type { Tau2Task } from './env';

// The fault schedule: for each task and each kind of fault, one write of the task, picked by a seeded
// generator, at which the fault happens. The scripted model issues the task's reference actions, one
// tool call per model step, then a final text.

export const FAULT_KINDS = [
  /** The worker is SIGKILLed at its own fault points (activities/faults.ts) on the chosen write. */
  'worker@before_dispatch',
  'worker@after_dispatch',
  'worker@after_execute',
  /** The MCP server is SIGKILLed right after it applied the write and saved its state, before it answers. */
  'mcp@after_apply',
  /** The Temporal server is SIGKILLed and restarted on its file while the MCP server holds the applied write's answer. */
  'temporal@after_apply',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export const MCP_SERVER = 'tau2';
export const toolName = (tau2Tool: string): string => `${MCP_SERVER}__${tau2Tool}`;
export const callId = (i: number): string => `a${i}`;

export interface Case {
  task: Tau2Task;
  kind: FaultKind | 'none';
  /** The action index of the write the fault hits. */
  action: number;
  /** Its 1-based place among the task's writes (the server's fault points count writes). */
  nthWrite: number;
}

/** mulberry32: a small seeded generator, so a schedule is the same on every machine. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The worker's fault points are armed by tool name and stop at the first call of it a worker makes, so
 * the candidates are each write tool's first call in the task; the others are picked among all writes.
 */
export function schedule(tasks: readonly Tau2Task[], kinds: readonly FaultKind[], seed: number): Case[] {
  const out: Case[] = [];
  for (const task of tasks) {
    // A generator per task, so a task's picks are the same whichever other tasks run (--tasks).
    const next = random(seed * 1_000_003 + [...task.id].reduce((h, ch) => h * 31 + ch.charCodeAt(0), 7));
    const writes = task.actions.flatMap((a, i) => (a.write ? [i] : []));
    const firsts = writes.filter((i) => writes.find((j) => task.actions[j]!.name === task.actions[i]!.name) === i);
    for (const kind of kinds) {
      const pool = kind.startsWith('worker@') ? firsts : writes;
      const action = pool[Math.floor(next() * pool.length)]!;
      out.push({ task, kind, action, nthWrite: writes.indexOf(action) + 1 });
    }
  }
  return out;
}

/** The scripted model's steps for a task: its reference actions, one per step, then a final answer. */
export function scriptSteps(task: Tau2Task): { text?: string; toolCalls?: unknown[] }[] {
  return [
    ...task.actions.map((a, i) => ({ toolCalls: [{ id: callId(i), name: toolName(a.name), arguments: a.arguments }] })),
    { text: `task ${task.id}: done` },
  ];
}
