// The limits a user sets for a turn (TurnOptions): per session (the session's start input) and per
// turn (the `message` signal's `options`, merged over the session's). Their ranges live here, once:
// the library and the CLI check them before sending, the session before queueing a message, and
// startAgentTurn before starting a turn. Pure and workflow-safe.

import type { TurnOptions } from './types';

/**
 * Model calls one turn may make when nothing sets `maxIterations`. A multi-step task takes one model
 * call per step plus the answer: 40 leaves room for a 30-step task with retries of a failed step,
 * and stays well inside what one turn's history holds (docs/configuration.md).
 */
export const DEFAULT_MAX_ITERATIONS = 40;

/** A limit a user may set: its range. */
interface Range {
  min: number;
  max: number;
}

/**
 * Every option, with its range. `maxIterations` stops at 200: each model call carries the transcript
 * so far, so one turn's history grows with the square of its model calls (npm run bench:storage), and
 * a longer task is better split over turns.
 */
export const TURN_OPTIONS: Readonly<Record<keyof TurnOptions, Range>> = Object.freeze({
  maxIterations: { min: 1, max: 200 },
});

const NAMES = Object.keys(TURN_OPTIONS).join(', ');

const show = (v: unknown): string =>
  typeof v === 'string' ? `'${v.slice(0, 40)}'` : v === null ? 'null' : typeof v === 'object' ? typeof v : String(v);

/** Why `raw` cannot be a turn's options (one line, naming the option and its range), or undefined. Trusts nothing. */
export function turnOptionsProblem(raw: unknown): string | undefined {
  if (raw === undefined) return undefined;
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    return `options must be an object such as { maxIterations: ${DEFAULT_MAX_ITERATIONS} }, got ${show(raw)}`;
  for (const [name, value] of Object.entries(raw)) {
    const range = (TURN_OPTIONS as Record<string, Range | undefined>)[name];
    if (!range) return `options.${name.slice(0, 40)} is not an option; the options are: ${NAMES}`;
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < range.min || value > range.max)
      return `options.${name} must be a whole number from ${range.min} to ${range.max}, got ${show(value)}`;
  }
  return undefined;
}

/** A turn's options: the turn's own over the session's; undefined when neither sets any (the turn's input stays as it was). */
export function mergeTurnOptions(session?: TurnOptions, turn?: TurnOptions): TurnOptions | undefined {
  const merged: TurnOptions = { ...session };
  for (const [name, value] of Object.entries(turn ?? {}))
    if (value !== undefined) (merged as Record<string, unknown>)[name] = value;
  return Object.keys(merged).length ? merged : undefined;
}

/** What the iteration cap's error tells a person to do (the CLI shows the option as its flag). */
export const RAISE_ITERATIONS = `raise it with the \`maxIterations\` option (at most ${TURN_OPTIONS.maxIterations.max}), or start a new turn to continue`;

/** The `options` field of a session's turn input: unchanged (the session's, or none) unless the message brings its own. */
export function turnOptionsArg(session?: TurnOptions, turn?: TurnOptions): { options?: TurnOptions } {
  const options = turn ? mergeTurnOptions(session, turn) : session;
  return options ? { options } : {};
}

/** The cap a turn applies: its `maxIterations`, else the default. */
export const iterationCap = (options: TurnOptions | undefined): number =>
  options?.maxIterations ?? DEFAULT_MAX_ITERATIONS;

/** The error of a turn that stopped at its cap: what happened and how to raise it. */
export const capReached = (cap: number): string => `iteration cap (${cap}) reached; ${RAISE_ITERATIONS}`;
