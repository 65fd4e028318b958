// When a schedule runs, as the user writes it: a cron expression or an interval. Pure: the client
// checks both before it asks the server, so a mistake is one line that says what to write instead.

const CRON_EXAMPLE = "e.g. '0 9 * * MON-FRI' (minute hour day-of-month month day-of-week) or '@daily'";
const SHORTHANDS = new Set(['@yearly', '@annually', '@monthly', '@weekly', '@daily', '@midnight', '@hourly']);
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

interface Field {
  name: string;
  min: number;
  max: number;
  names?: string[];
  /** What the first name stands for (JAN is 1, SUN is 0). */
  base?: number;
}
const SECOND: Field = { name: 'second', min: 0, max: 59 };
const FIELDS: Field[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS, base: 1 },
  { name: 'day-of-week', min: 0, max: 7, names: DAYS, base: 0 },
  { name: 'year', min: 1970, max: 2999 },
];

/** Why `expr` is not a cron expression the server takes (5-7 fields, a shorthand, `@every`), or undefined. */
export function cronProblem(expr: unknown): string | undefined {
  if (typeof expr !== 'string' || !expr.trim()) return `\`cron\` needs an expression, ${CRON_EXAMPLE}`;
  const bad = (why: string) => `invalid \`cron\` '${expr}': ${why}; ${CRON_EXAMPLE}`;
  // A time zone prefix and a trailing comment are the server's too.
  const body = expr
    .replace(/^\s*(CRON_TZ|TZ)=\S+\s+/, '')
    .replace(/#.*$/, '')
    .trim();
  if (body.startsWith('@every')) {
    const d = body.slice('@every'.length).trim().split('/')[0] ?? '';
    return !everyMs(d) ? bad(`'@every' needs an interval such as 30m or 1h`) : undefined;
  }
  if (body.startsWith('@')) return SHORTHANDS.has(body) ? undefined : bad(`unknown shorthand '${body}'`);
  const parts = body.split(/\s+/);
  if (parts.length < 5 || parts.length > 7) return bad(`it has ${parts.length} field(s), not 5 to 7`);
  const fields = parts.length === 7 ? [SECOND, ...FIELDS] : FIELDS.slice(0, parts.length);
  for (let i = 0; i < parts.length; i++) {
    const why = fieldProblem(parts[i]!, fields[i]!);
    if (why) return bad(`${fields[i]!.name} '${parts[i]}' ${why}`);
  }
  return undefined;
}

/** Why one field's text is wrong (`*`, `?`, values, ranges, steps, lists), or undefined. */
function fieldProblem(text: string, f: Field): string | undefined {
  for (const item of text.split(',')) {
    const [range, step, ...more] = item.split('/');
    if (more.length || (step !== undefined && !/^[1-9][0-9]*$/.test(step))) return 'has a bad step (after /)';
    if (range === '*' || range === '?') continue;
    const ends = (range ?? '').split('-');
    if (ends.length > 2) return 'has a bad range';
    for (const end of ends) {
      const v = valueOf(end, f);
      if (v === undefined) return `is not a number${f.names ? ' or a name' : ''}`;
      if (v < f.min || v > f.max) return `is out of ${f.min}-${f.max}`;
    }
  }
  return undefined;
}

function valueOf(text: string, f: Field): number | undefined {
  if (/^[0-9]+$/.test(text)) return Number(text);
  const i = f.names?.indexOf(text.toUpperCase().slice(0, 3)) ?? -1;
  return i >= 0 && /^[A-Za-z]+$/.test(text) ? i + (f.base ?? 0) : undefined;
}

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The interval `text` (e.g. `90s`, `15m`, `1h30m`, `1d`) in ms, or undefined when it is not one. */
export function everyMs(text: string): number | undefined {
  if (!/^([0-9]+[smhd])+$/.test(text)) return undefined;
  let ms = 0;
  for (const [, n, unit] of text.matchAll(/([0-9]+)([smhd])/g)) ms += Number(n) * UNIT_MS[unit!]!;
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** The interval `every` gives, in ms, or a one-line reason it is not one. */
export function parseEvery(text: unknown): { ms: number } | { problem: string } {
  const ms = typeof text === 'string' ? everyMs(text.trim()) : undefined;
  if (ms === undefined)
    return { problem: `invalid \`every\` '${String(text)}': use a number with s, m, h or d, e.g. 30m, 1h30m or 1d` };
  if (ms < 1000) return { problem: `invalid \`every\` '${String(text)}': the shortest interval is 1s` };
  return { ms };
}

/** An interval in ms as the user would write it (`1h30m`). */
export function formatEvery(ms: number): string {
  let rest = Math.round(ms / 1000);
  const out: string[] = [];
  for (const [unit, secs] of [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (rest >= secs) {
      out.push(`${Math.floor(rest / secs)}${unit}`);
      rest %= secs;
    }
  }
  return out.join('') || '0s';
}

/** Why `zone` is not an IANA time zone name (checked against Node's zone database), or undefined. */
export function timezoneProblem(zone: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return undefined;
  } catch {
    return `invalid \`timezone\` '${zone}': use an IANA time zone name such as Europe/Berlin or UTC`;
  }
}
