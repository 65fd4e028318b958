import type { z } from 'zod';

import type { ReconcileAnswer, RecoveryPolicy, ToolEffect } from '../workflows/types';

// The effect, recovery policy and reconcile answer are protocol facts: declared once, in workflows/types.
export type { ReconcileAnswer, RecoveryPolicy, ToolEffect };

export interface ToolContext {
  /** Stable across every attempt of this tool call; use it as the idempotency key. */
  readonly executionId: string;
  /** 1-based; counts every attempt of this execution, automatic or decided by a human. */
  readonly attempt: number;
  readonly sessionId: string;
  readonly turn: number;
  readonly toolCallId: string;
  /** Aborted when the activity is cancelled or the worker shuts down. */
  readonly signal: AbortSignal;
  /** The runtime heartbeats on the tool's behalf; call this to attach progress details. */
  heartbeat(details?: unknown): void;
}

/** Durations are milliseconds or `ms`-style strings (`'30s'`, `'2 minutes'`). */
export type Duration = number | string;

export interface ToolTimeouts {
  /** Upper bound for one attempt of `execute`. Default 2 minutes. */
  startToClose?: Duration;
  /** A dead worker is noticed within this time. Default 5 seconds. */
  heartbeat?: Duration;
}

// Structural so that a tools module may bring its own copy of zod.
type Schema = z.ZodType;

export interface ToolConfig<S extends Schema, R> {
  name: string;
  description: string;
  input: S;
  /** The JSON Schema the model is shown, when the input came as one (MCP tools); default: derived from `input`. */
  jsonSchema?: Record<string, unknown>;
  effect?: ToolEffect;
  requiresApproval?: boolean;
  recovery?: RecoveryPolicy;
  /** Automatic attempts for `idempotent` (and read) tools before the call needs a human. Default 5 (read: 3). */
  maxAttempts?: number;
  /** Names the thing acted on (a recipient, an account) for summaries and approvals. */
  target?: (input: z.infer<S>) => string | undefined;
  /**
   * How long the external system keeps idempotency keys. An automatic or decided retry later than
   * this after the first attempt is refused (the key may be forgotten, so a retry could apply twice).
   */
  idempotencyWindow?: Duration;
  /** Arguments (canonical JSON) larger than this make the call invalid. Default 64 KiB or `OPENWORKER_MAX_ARGS_BYTES`. */
  maxArgsBytes?: number;
  /** A result (JSON) larger than this is kept as a marked preview. Default 256 KiB or `OPENWORKER_MAX_RESULT_BYTES`. */
  maxResultBytes?: number;
  execute: (input: z.infer<S>, ctx: ToolContext) => Promise<R> | R;
  reconcile?: (input: z.infer<S>, ctx: ToolContext) => Promise<ReconcileAnswer<R>> | ReconcileAnswer<R>;
  timeouts?: ToolTimeouts;
  /**
   * Run as a local activity, inside the turn's workflow task: one history event instead of an
   * activity's three and a task of its own. Reads only, and their default; at-least-once, which reads
   * allow. Set `false` for a read that may take more than a few seconds (the task then heartbeats,
   * three events every ~8 s) or that should show as an activity of its own in the Web UI.
   */
  local?: boolean;
  /**
   * A person answers the call with the `answer` signal instead of `execute` running (the ask_user
   * built-in, workflows/answers.ts): the call parks in awaiting_answer, needs no approval, runs nothing.
   */
  answeredByPerson?: boolean;
}

/** A tool with every default filled in; what the worker registers. */
export interface Tool<S extends Schema = Schema, R = unknown> extends ToolConfig<S, R> {
  readonly effect: ToolEffect;
  readonly requiresApproval: boolean;
  readonly recovery: RecoveryPolicy;
  readonly maxAttempts: number;
  readonly local: boolean;
  readonly kind: 'openworker-tool';
}

/** A tool's outcome is definitely "not applied": the model sees the message, nothing is retried. */
export class ToolFailure extends Error {
  constructor(
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ToolFailure';
  }
}

/**
 * The outcome is unknown and retrying cannot help (the external system refused the key for other
 * arguments, or the key may have expired there): no automatic retry; reconcile or a human decides.
 * Any other exception is also an unknown outcome, but `idempotent` tools retry it.
 */
export class UnknownOutcome extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnknownOutcome';
  }
}

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export function defineTool<S extends Schema, R>(config: ToolConfig<S, R>): Tool<S, R> {
  const where = `defineTool(${JSON.stringify(config?.name)})`;
  if (!config || typeof config !== 'object') throw new TypeError('defineTool: expected a config object');
  if (typeof config.name !== 'string' || !NAME.test(config.name)) {
    throw new TypeError(`${where}: name must be 1-64 letters, digits, '_' or '-'`);
  }
  if (typeof config.description !== 'string' || !config.description.trim()) {
    throw new TypeError(`${where}: description is required; the model reads it to decide when to call the tool`);
  }
  if (!config.input || typeof (config.input as { safeParse?: unknown }).safeParse !== 'function') {
    throw new TypeError(`${where}: input must be a zod schema, e.g. z.object({ ... })`);
  }
  if (typeof config.execute !== 'function') throw new TypeError(`${where}: execute(input, ctx) is required`);
  const effect = config.effect ?? 'external';
  if (effect !== 'read' && effect !== 'external') throw new TypeError(`${where}: effect must be 'read' or 'external'`);
  const recovery = config.recovery ?? 'manual';
  if (!['manual', 'idempotent', 'reconcile'].includes(recovery)) {
    throw new TypeError(`${where}: recovery must be 'manual', 'idempotent' or 'reconcile'`);
  }
  if (recovery === 'reconcile' && typeof config.reconcile !== 'function') {
    throw new TypeError(`${where}: recovery 'reconcile' needs a reconcile(input, ctx) function`);
  }
  const maxAttempts = config.maxAttempts ?? (effect === 'read' ? 3 : 5);
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1)
    throw new TypeError(`${where}: maxAttempts must be a positive integer`);
  for (const key of ['maxArgsBytes', 'maxResultBytes'] as const) {
    const v = config[key];
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 1))
      throw new TypeError(`${where}: ${key} must be a positive whole number of bytes`);
  }
  if (config.local && effect !== 'read')
    throw new TypeError(
      `${where}: local applies to reads only; a tool with an external effect runs as its own activity`,
    );
  return Object.freeze({
    ...config,
    local: config.local ?? effect === 'read',
    effect,
    requiresApproval: config.requiresApproval ?? effect === 'external',
    recovery,
    maxAttempts,
    kind: 'openworker-tool' as const,
  });
}

export function isTool(value: unknown): value is Tool {
  return !!value && typeof value === 'object' && (value as { kind?: unknown }).kind === 'openworker-tool';
}
