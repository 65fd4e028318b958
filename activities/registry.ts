import { msToNumber } from '@temporalio/common/lib/time';
import { z } from 'zod';
import type { PlannedCall, ToolCall, ToolSpec } from '../workflows/types';
import { argsDigest } from '../workflows/identity';
import type { ToolDescriptor } from './model';
import type { Tool } from './tool';
import { isTool } from './tool';

const DEFAULT_START_TO_CLOSE = '2 minutes';
const DEFAULT_HEARTBEAT = '5 seconds';

export interface ToolRegistry {
  get(name: string): Tool | undefined;
  names(): string[];
  descriptors(): ToolDescriptor[];
  /** Looks up and validates the model's tool calls; never throws for bad model output. */
  plan(calls: readonly ToolCall[]): PlannedCall[];
}

export function specOf(tool: Tool): ToolSpec {
  return {
    name: tool.name,
    effect: tool.effect,
    requiresApproval: tool.requiresApproval,
    recovery: tool.recovery,
    maxAttempts: tool.maxAttempts,
    hasReconcile: typeof tool.reconcile === 'function',
    startToCloseMs: msToNumber(tool.timeouts?.startToClose ?? DEFAULT_START_TO_CLOSE),
    heartbeatMs: msToNumber(tool.timeouts?.heartbeat ?? DEFAULT_HEARTBEAT),
  };
}

/** One line naming every field that failed. */
export function describeIssues(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }): string {
  return error.issues.map((i) => `${i.path.map(String).join('.') || '(input)'}: ${i.message}`).join('; ');
}

export function createRegistry(tools: readonly Tool[]): ToolRegistry {
  const byName = new Map<string, Tool>();
  for (const tool of tools) {
    if (!isTool(tool)) throw new TypeError(`not a tool: ${JSON.stringify(tool)?.slice(0, 80)}; build tools with defineTool()`);
    if (byName.has(tool.name)) throw new Error(`two tools are named '${tool.name}'; tool names must be unique`);
    specOf(tool); // fail at startup, not mid-turn, on a bad duration
    byName.set(tool.name, tool);
  }
  const descriptors = [...byName.values()].map((t) => ({ name: t.name, description: t.description, inputSchema: jsonSchemaOf(t) }));

  const planOne = (call: ToolCall, index: number): PlannedCall => {
    const toolCallId = typeof call?.id === 'string' && call.id ? call.id : `call_missing_${index}`;
    const name = typeof call?.name === 'string' ? call.name : String(call?.name);
    let args: unknown = call?.arguments ?? {};
    let invalid: string | undefined;
    if (typeof args === 'string') {
      try {
        args = args.trim() ? JSON.parse(args) : {};
      } catch {
        invalid = `arguments for '${name}' are not valid JSON`;
      }
    }
    const base = { toolCallId, name, arguments: args, argsDigest: argsDigest(args) };
    if (invalid) return { ...base, invalid };
    const tool = byName.get(name);
    if (!tool) return { ...base, invalid: `unknown tool '${name}'; available tools: ${[...byName.keys()].join(', ') || '(none)'}` };
    const parsed = tool.input.safeParse(args);
    if (!parsed.success) return { ...base, spec: specOf(tool), invalid: `invalid arguments for '${name}': ${describeIssues(parsed.error)}` };
    let target: string | undefined;
    try {
      target = tool.target?.(parsed.data) ?? undefined;
    } catch {
      target = undefined;
    }
    return { ...base, spec: specOf(tool), ...(target ? { target: String(target).slice(0, 200) } : {}) };
  };

  return {
    get: (name) => byName.get(name),
    names: () => [...byName.keys()],
    descriptors: () => descriptors,
    plan: (calls) => calls.map(planOne),
  };
}

function jsonSchemaOf(tool: Tool): Record<string, unknown> {
  try {
    return z.toJSONSchema(tool.input as z.ZodType) as Record<string, unknown>;
  } catch {
    return { type: 'object' };
  }
}
