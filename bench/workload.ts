import { appendFileSync } from 'node:fs';
import { z } from 'zod';
import type { ModelProvider } from '../activities/model';
import { defineTool } from '../activities/tool';
import type { Tool } from '../activities/tool';

// The benchmark's workload, shared by every system under test: the same model and the same tools.

/** The message that asks for a turn with `k` calls of `tool`. */
export const benchMessage = (k: number, tool: BenchTool): string => `bench k=${k} tool=${tool}`;

export const BENCH_TOOLS = ['noop', 'sleep50', 'noop_read', 'effect'] as const;
export type BenchTool = (typeof BENCH_TOOLS)[number];

/** The ids of the calls the model emits in the turn that starts at `assistantMessages` (unique per session). */
export const callIdsFor = (assistantMessages: number, k: number): string[] =>
  Array.from({ length: k }, (_, i) => `b${assistantMessages}-${i}`);

/**
 * A model with no latency of its own: for "bench k=K tool=T" it answers the first call of a turn with
 * K calls of T and the second with text. Deterministic, so every system sees the same responses.
 */
export function benchModel(): ModelProvider {
  return {
    name: 'bench',
    async generate({ messages }) {
      const lastUser = [...messages].reverse().find((m) => m.role === 'user');
      const m = /^bench k=(\d+) tool=(\w+)$/.exec(lastUser?.role === 'user' ? lastUser.content : '');
      const k = Number(m?.[1] ?? 0);
      const tool = m?.[2] ?? 'noop';
      const assistants = messages.filter((x) => x.role === 'assistant').length;
      const afterUser = messages.length - 1 - messages.map((x) => x.role).lastIndexOf('user');
      if (k === 0 || afterUser > 0) return { text: 'done', toolCalls: [] };
      return { text: '', toolCalls: callIdsFor(assistants, k).map((id, i) => ({ id, name: tool, arguments: { i } })) };
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
