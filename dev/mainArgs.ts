import type { EventEmitter } from 'node:events';

/**
 * Flags for the fakes' own-process runners: each `--flag value` (or `--flag=value`) falls back to an
 * environment variable; a flag mapped to `undefined` is a switch that takes no value.
 */
export type FlagSpec = Record<string, string | undefined>;

export function parseFlags(
  flags: FlagSpec,
  argv: string[],
  env: NodeJS.ProcessEnv,
): Record<string, string | undefined> {
  const values: Record<string, string | undefined> = {};
  for (const [flag, name] of Object.entries(flags)) values[flag] = name ? env[name] || undefined : undefined;
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.split(/=(.*)/s, 2) as [string, string | undefined];
    if (!(flag in flags))
      throw new Error(`unknown argument ${JSON.stringify(argv[i])}; expected ${Object.keys(flags).join(', ')}`);
    if (!flags[flag]) {
      values[flag] = 'true';
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    values[flag] = value;
  }
  return values;
}

/** An integer flag in [0, max], or undefined when absent; the error names the flag and its variable. */
export function integerFlag(flags: FlagSpec, value: string | undefined, flag: string, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n > max)
    throw new Error(`${flag} (${flags[flag]}) must be an integer 0-${max}, got ${JSON.stringify(value)}`);
  return n;
}

/** What a fake (the mail sink, the payments API) gives its own-process runner. */
export interface Fake {
  events: EventEmitter;
  close(): Promise<void>;
}

/**
 * Runs a started fake as a process: one JSON `ready` line on stdout, then one `<prefix> <barrier> <id>`
 * line per barrier (a test waits for them instead of sleeping); SIGTERM/SIGINT close it, and so does
 * the end of stdin with `exitWithStdin` (a test runner killed without cleaning up leaves no orphan).
 */
export function runFake(
  label: string,
  prefix: string,
  start: () => Promise<{ fake: Fake; ready: object; exitWithStdin: boolean }>,
): void {
  const fail = (err: Error): never => {
    process.stderr.write(`${label}: ${err.message.replace(new RegExp(`^${label}: `), '')}\n`);
    process.exit(1);
  };
  start().then(({ fake, ready, exitWithStdin }) => {
    // Barrier lines go out in the order they happen.
    fake.events.on('barrier', (name: string, id: string) => process.stdout.write(`${prefix} ${name} ${id}\n`));
    let stopping = false;
    const stop = (why: string) => {
      if (stopping) return;
      stopping = true;
      process.stderr.write(`${label}: ${why}, closing\n`);
      fake.close().then(
        () => process.exit(0),
        (err: Error) => fail(new Error(`close failed: ${err.message}`)),
      );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    if (exitWithStdin) process.stdin.on('end', () => stop('stdin closed')).resume();
    process.stdout.write(JSON.stringify(ready) + '\n');
  }, fail);
}
