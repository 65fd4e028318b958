import { msToNumber } from '@temporalio/common/lib/time';
import { z } from 'zod';
import type { PlannedCall, ToolCall, ToolSpec } from '../workflows/types';
import { argsDigest } from '../workflows/identity';
import type { ToolDescriptor } from './model';
import type { Tool } from './tool';
import { isTool } from './tool';
import { DEFAULT_LIMITS, argsProblem, boundedCallFields, jsonBytes, omittedArgs } from './limits';
import { mayCauseEffect } from './approvers';

const DEFAULT_START_TO_CLOSE = '2 minutes';
const DEFAULT_HEARTBEAT = '5 seconds';

export interface ToolRegistry {
  get(name: string): Tool | undefined;
  names(): string[];
  descriptors(): ToolDescriptor[];
  /** Looks up and validates the model's tool calls; never throws for bad model output. */
  plan(calls: readonly ToolCall[]): PlannedCall[];
  /**
   * Replaces the whole set (an MCP server changed its list): checked like the first, and on a problem
   * the old set stays and the error is thrown. Calls already planned keep the spec they were planned with.
   */
  setTools(tools: readonly Tool[]): void;
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
    ...(tool.local ? { local: true } : {}),
    ...(tool.answeredByPerson ? { asks: true as const } : {}),
  };
}

const ISSUES_SHOWN = 10;

/** One line naming the fields that failed (the first ten: an array of bad items must not make a huge error). */
export function describeIssues(error: {
  issues: readonly { path: readonly PropertyKey[]; message: string }[];
}): string {
  const shown = error.issues
    .slice(0, ISSUES_SHOWN)
    .map((i) => `${i.path.map(String).join('.').slice(0, 200) || '(input)'}: ${i.message.slice(0, 200)}`);
  const more = error.issues.length - shown.length;
  return shown.join('; ') + (more > 0 ? `; and ${more} more` : '');
}

/** `maxArgsBytes`: the limit for tools that set none (a tool's own `maxArgsBytes` wins). */
export function createRegistry(tools: readonly Tool[], options: { maxArgsBytes?: number } = {}): ToolRegistry {
  const defaultMaxArgs = options.maxArgsBytes ?? DEFAULT_LIMITS.maxArgsBytes;
  const index = (given: readonly Tool[]) => {
    // A Map, not an object: a model naming `__proto__` or `toString` finds no tool.
    const map = new Map<string, Tool>();
    for (const tool of given) {
      if (!isTool(tool))
        throw new TypeError(`not a tool: ${JSON.stringify(tool)?.slice(0, 80)}; build tools with defineTool()`);
      if (map.has(tool.name)) throw new Error(`two tools are named '${tool.name}'; tool names must be unique`);
      specOf(tool); // fail at startup, not mid-turn, on a bad duration
      map.set(tool.name, tool);
    }
    const described = [...map.values()].map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: t.jsonSchema ?? jsonSchemaOf(t),
    }));
    return { map, described };
  };
  let { map: byName, described: descriptors } = index(tools);

  const planOne = (call: ToolCall, index: number): PlannedCall => {
    const { toolCallId, name } = boundedCallFields(call, index);
    let args: unknown = call?.arguments ?? {};
    let invalid: string | undefined;
    if (typeof args === 'string') {
      try {
        args = args.trim() ? JSON.parse(args) : {};
      } catch {
        invalid = `arguments for '${name}' are not valid JSON`;
      }
    }
    const tool = byName.get(name);
    // Oversized arguments are refused before anything else, and not kept: the ledger and the
    // transcript hold a placeholder; the digest still identifies what the model sent.
    const bytes = jsonBytes(args) ?? 0;
    const tooLarge = argsProblem(name, bytes, tool?.maxArgsBytes ?? defaultMaxArgs);
    if (tooLarge)
      return {
        toolCallId,
        name,
        arguments: omittedArgs(bytes),
        argsDigest: argsDigest(args),
        ...(tool ? { spec: specOf(tool) } : {}),
        invalid: tooLarge,
      };
    const base = { toolCallId, name, arguments: args, argsDigest: argsDigest(args) };
    if (invalid) return { ...base, invalid };
    if (!tool)
      return {
        ...base,
        invalid: `unknown tool '${name}'; available tools: ${[...byName.keys()].join(', ') || '(none)'}`,
      };
    const parsed = tool.input.safeParse(args);
    if (!parsed.success)
      return {
        ...base,
        spec: specOf(tool),
        invalid: `invalid arguments for '${name}': ${describeIssues(parsed.error)}`,
      };
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
    setTools: (next) => {
      ({ map: byName, described: descriptors } = index(next));
    },
  };
}

function jsonSchemaOf(tool: Tool): Record<string, unknown> {
  try {
    return z.toJSONSchema(tool.input as z.ZodType) as Record<string, unknown>;
  } catch {
    return { type: 'object' };
  }
}

/** Whether a planned call can park (wait for approval, ask a person, or need a recovery decision). */
export const canPark = (call: PlannedCall): boolean =>
  mayCauseEffect(call) || (!call.invalid && call.spec?.asks === true);

/**
 * A registry whose calls that can park carry `notify` (the worker's `notify` option): their parks
 * schedule the notify activity (workflows/notifyParks.ts). Off, the registry is unchanged and no
 * turn schedules anything, so a deployment without notifiers grows no pending activities.
 */
export function withNotify(registry: ToolRegistry, on: boolean): ToolRegistry {
  if (!on) return registry;
  return {
    ...registry,
    plan: (calls) => registry.plan(calls).map((c) => (canPark(c) ? { ...c, notify: true as const } : c)),
  };
}
