import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import type { OpenWorkerClient } from '../client/connection';
import { connectClient } from '../client/connection';
import type { Settings } from '../runtime/settings';
import { TURN_OPTIONS } from '../workflows/turnOptions';
import { inCliTerms } from './flags';
import type { TurnOptions } from '../workflows/types';

/** What every command module of the CLI shares: the global options, option parsers, the client and the output. */

interface Globals {
  json?: boolean;
  address?: string;
  namespace?: string;
  taskQueue?: string;
}

export const positiveInt =
  (flag: string) =>
  (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${flag} must be a positive integer`);
    return n;
  };
/** A turn limit from its flag, in the range workflows/turnOptions.ts gives it. */
export const turnLimit =
  (name: keyof TurnOptions, flag: string = inCliTerms(`\`${name}\``)) =>
  (value: string): number => {
    const { min, max } = TURN_OPTIONS[name];
    const n = Number(value);
    if (!Number.isInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`${flag} must be a whole number from ${min} to ${max}`);
    return n;
  };
export const port = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number 0-65535');
  return n;
};
export const json = (value: string): unknown => {
  try {
    return JSON.parse(value);
  } catch {
    throw new InvalidArgumentError(`not valid JSON: ${value.slice(0, 60)}; quote it, e.g. --result '{"id": 1}'`);
  }
};

export function globals(cmd: Command): Globals {
  return cmd.optsWithGlobals() as Globals;
}

const read = new WeakMap<Command, Settings>();

/** cli/main.ts: the settings, read once before the command runs. */
export function setSettings(program: Command, settings: Settings): void {
  read.set(program, settings);
}

/** The settings main read for this run (a flag given to the command wins over them). */
export function settingsOf(cmd: Command): Settings {
  let root = cmd;
  while (root.parent) root = root.parent;
  const settings = read.get(root);
  if (!settings) throw new Error('the CLI reads its settings before a command runs (cli/main.ts)');
  return settings;
}

/** The client of a command: the global flags, else the settings. */
export function clientOptions(cmd: Command) {
  const g = globals(cmd);
  return { address: g.address, namespace: g.namespace, taskQueue: g.taskQueue, settings: settingsOf(cmd) };
}

export async function withClient<T>(cmd: Command, fn: (c: OpenWorkerClient) => Promise<T>): Promise<T> {
  const c = await connectClient(clientOptions(cmd));
  try {
    return await fn(c);
  } finally {
    await c.close();
  }
}

export function print(cmd: Command, value: unknown, human: string): void {
  console.log(globals(cmd).json ? JSON.stringify(value, null, 2) : human);
}
