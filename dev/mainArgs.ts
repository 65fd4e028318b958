/**
 * Flags for the fakes' own-process runners: each `--flag value` (or `--flag=value`) falls back to an
 * environment variable; a flag mapped to `undefined` is a switch that takes no value.
 */
export type FlagSpec = Record<string, string | undefined>;

export function parseFlags(flags: FlagSpec, argv: string[], env: NodeJS.ProcessEnv): Record<string, string | undefined> {
  const values: Record<string, string | undefined> = {};
  for (const [flag, name] of Object.entries(flags)) values[flag] = name ? env[name] || undefined : undefined;
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i]!.split(/=(.*)/s, 2) as [string, string | undefined];
    if (!(flag in flags)) throw new Error(`unknown argument ${JSON.stringify(argv[i])}; expected ${Object.keys(flags).join(', ')}`);
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
  if (!/^\d+$/.test(value) || n > max) throw new Error(`${flag} (${flags[flag]}) must be an integer 0-${max}, got ${JSON.stringify(value)}`);
  return n;
}
