import type { Env, Setting } from './config';
import { readString } from './config';

// What a model response and a tool result may cost (activities/limits.ts applies them), and their
// OPENWORKER_MAX_ variables.

export interface Limits {
  /** Canonical JSON of one call's arguments; a tool's `maxArgsBytes` overrides it. */
  maxArgsBytes: number;
  /** JSON of one tool result; a tool's `maxResultBytes` overrides it. */
  maxResultBytes: number;
  /** Tool calls taken from one model response. */
  maxToolCalls: number;
  /** The text of one model response. */
  maxModelTextBytes: number;
}

export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  maxArgsBytes: 64 * 1024,
  maxResultBytes: 256 * 1024,
  maxToolCalls: 64,
  maxModelTextBytes: 64 * 1024,
});

export const LIMIT_ENV: Readonly<Record<keyof Limits, Setting>> = Object.freeze({
  maxArgsBytes: 'OPENWORKER_MAX_ARGS_BYTES',
  maxResultBytes: 'OPENWORKER_MAX_RESULT_BYTES',
  maxToolCalls: 'OPENWORKER_MAX_TOOL_CALLS',
  maxModelTextBytes: 'OPENWORKER_MAX_MODEL_TEXT_BYTES',
});

/** The worker's limits from its environment; a bad value stops the worker with a one-line error. */
export function limitsFromEnv(env: Env): Limits {
  const out = { ...DEFAULT_LIMITS };
  for (const key of Object.keys(LIMIT_ENV) as (keyof Limits)[]) {
    const raw = readString(LIMIT_ENV[key], env);
    if (!raw) continue;
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < 1)
      throw new Error(
        `${LIMIT_ENV[key]} must be a positive whole number, got '${raw}' (default ${DEFAULT_LIMITS[key]})`,
      );
    out[key] = n;
  }
  return out;
}
