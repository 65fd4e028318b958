import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import type { ModelProvider } from '../activities/model';
import { defineTool } from '../activities/tool';
import type { Tool } from '../activities/tool';

// The benchmark's workload, shared by every system under test: the same model and the same tools.

export const BENCH_TOOLS = ['noop', 'sleep50', 'noop_read', 'effect'] as const;
export type BenchTool = (typeof BENCH_TOOLS)[number];

/** One model response before the turn's final text: `k` calls of `tool`. */
export interface Step {
  k: number;
  tool: BenchTool;
}

/** A turn the bench runs: the model's responses with calls, in order, then text; every model call takes `latencyMs`. */
export interface TurnShape {
  steps: readonly Step[];
  latencyMs: number;
}

/** `k` calls of `tool` in one response (none when k = 0). */
export const calls = (k: number, tool: BenchTool): Step[] => (k ? [{ k, tool }] : []);

/** The mixed agent turn: 5 auto-approved read calls, then 1 protected call, then text (3 model responses). */
export const MIXED: readonly Step[] = [
  { k: 5, tool: 'noop_read' },
  { k: 1, tool: 'noop' },
];

/** A workload's name in tables: `k=1 noop`, `mixed (5 read + 1 protected)`. */
export const workloadName = (k: number, tool: string): string =>
  tool === 'mixed'
    ? `mixed (${MIXED.map((s) => `${s.k} ${s.tool === 'noop_read' ? 'read' : 'protected'}`).join(' + ')})`
    : `k=${k}${k ? ` ${tool}` : ''}`;

/** The message that asks the bench model for a turn of this shape. */
export const benchMessage = ({ steps, latencyMs }: TurnShape): string =>
  `bench ${steps.map((r) => `${r.k}*${r.tool}`).join(',') || 'text'} latency=${latencyMs}`;

/** Reads a bench message back; anything else is a turn without calls and without latency. */
export function shapeOf(message: string): TurnShape {
  const m = /^bench (\S+) latency=(\d+)$/.exec(message);
  if (!m || m[1] === 'text') return { steps: [], latencyMs: Number(m?.[2] ?? 0) };
  const steps = m[1]!.split(',').map((r) => {
    const [k, tool] = r.split('*');
    return { k: Number(k), tool: tool as BenchTool };
  });
  return { steps, latencyMs: Number(m[2]) };
}

/** The ids of the calls the model emits in the turn that starts at `assistantMessages` (unique per session). */
export const callIdsFor = (assistantMessages: number, k: number): string[] =>
  Array.from({ length: k }, (_, i) => `b${assistantMessages}-${i}`);

/**
 * The calls of a one-turn session that wait for a person, by the model response that asks for them
 * (0 = the first): what the automatic approver approves, one signal per response.
 */
export const protectedCalls = ({ steps }: TurnShape): { response: number; ids: string[] }[] =>
  steps.flatMap((s, response) =>
    s.k && benchTools.find((t) => t.name === s.tool)?.requiresApproval
      ? [{ response, ids: callIdsFor(response, s.k) }]
      : [],
  );

/**
 * A model whose only cost is a fixed latency (the message's `latency=`, ms, on every call): the i-th
 * call after the user's message answers with the i-th response's calls, then with text.
 * Deterministic, so every system sees the same responses.
 */
export function benchModel(): ModelProvider {
  return {
    name: 'bench',
    async generate({ messages }) {
      const lastUser = [...messages].reverse().find((m) => m.role === 'user');
      const { steps, latencyMs } = shapeOf(lastUser?.role === 'user' ? lastUser.content : '');
      if (latencyMs > 0) await sleep(latencyMs);
      const assistants = messages.filter((x) => x.role === 'assistant').length;
      const step = messages.slice(messages.lastIndexOf(lastUser!) + 1).filter((x) => x.role === 'assistant').length;
      const r = steps[step];
      if (!r?.k) return { text: 'done', toolCalls: [] };
      return {
        text: '',
        toolCalls: callIdsFor(assistants, r.k).map((id, i) => ({ id, name: r.tool, arguments: { i } })),
      };
    },
  };
}

const input = z.object({ i: z.number().int() });
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export const benchTools: Tool[] = [
  // A protected call: external effect, approval by signal, recovery manual (the default).
  defineTool({
    name: 'noop',
    description: 'does nothing (protected)',
    input,
    effect: 'external',
    requiresApproval: true,
    execute: async ({ i }) => ({ ok: i }),
  }),
  defineTool({
    name: 'sleep50',
    description: 'waits 50 ms (protected)',
    input,
    effect: 'external',
    requiresApproval: true,
    execute: async ({ i }) => {
      await sleep(50);
      return { ok: i };
    },
  }),
  // The crash scenarios' tool: its effect is a line with the execution ID in the BENCH_EFFECTS file,
  // so a duplicate is two lines. A short heartbeat timeout makes a lost worker visible in 2 s.
  defineTool({
    name: 'effect',
    description: 'records its execution ID once per run (protected)',
    input,
    effect: 'external',
    requiresApproval: true,
    timeouts: { heartbeat: '2s' },
    execute: async ({ i }, ctx) => {
      if (process.env.BENCH_EFFECTS) appendFileSync(process.env.BENCH_EFFECTS, `${ctx.executionId}\n`);
      return { ok: i };
    },
  }),
  // An auto-approved read call.
  defineTool({
    name: 'noop_read',
    description: 'does nothing (read)',
    input,
    effect: 'read',
    execute: async ({ i }) => ({ ok: i }),
  }),
];
