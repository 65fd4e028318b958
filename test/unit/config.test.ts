import { strict as assert } from 'node:assert';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { SETTINGS, readChoice, readInt, readString } from '../../runtime/config';
import type { Setting } from '../../runtime/config';

// Every OPENWORKER_* variable is declared once (runtime/config.ts), read through its typed readers,
// and documented in docs/configuration.md.

const ROOT = join(__dirname, '..', '..', '..');
const SOURCE_DIRS = ['workflows', 'activities', 'runtime', 'worker', 'client', 'cli', 'apps', 'dev', 'api'];
/** Tokens that look like variables but are not: the fault report's stderr prefix, and OPENWORKER_MAX_* in prose. */
const NOT_VARIABLES = new Set(['OPENWORKER_FAULT', 'OPENWORKER_MAX']);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}
const files = [join(ROOT, 'index.ts'), ...SOURCE_DIRS.flatMap((d) => sources(join(ROOT, d)))];

describe('configuration: one module reads every OPENWORKER_* variable', () => {
  it('every variable the code names is declared in SETTINGS', () => {
    const unknown = new Set<string>();
    for (const f of files) {
      for (const m of readFileSync(f, 'utf8').matchAll(/OPENWORKER_[A-Z_]*[A-Z]/g)) {
        if (!(m[0] in SETTINGS) && !NOT_VARIABLES.has(m[0])) unknown.add(`${m[0]} (${f.slice(ROOT.length + 1)})`);
      }
    }
    assert.deepEqual([...unknown], []);
  });

  it('nothing outside runtime/config.ts reads one from the environment directly', () => {
    const raw = files
      .filter((f) => !f.endsWith(join('runtime', 'config.ts')))
      .flatMap((f) =>
        readFileSync(f, 'utf8')
          .split('\n')
          .map((line, i) => ({ where: `${f.slice(ROOT.length + 1)}:${i + 1}`, line })),
      )
      .filter(({ line }) => /env\.OPENWORKER_|env\[\s*'OPENWORKER_[A-Z_]+'\s*\]/.test(line))
      .map(({ where }) => where);
    assert.deepEqual(raw, []);
  });

  it('docs/configuration.md names every variable', () => {
    const doc = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');
    const missing = (Object.keys(SETTINGS) as Setting[]).filter((name) => {
      // The table groups a family: `OPENWORKER_SMTP_HOST`, `_PORT`, …
      const family = name.split('_').slice(0, 2).join('_');
      return !doc.includes(name) && !(doc.includes(family) && doc.includes(`\`${name.slice(family.length)}\``));
    });
    assert.deepEqual(missing, []);
  });
});

describe('configuration: the typed readers', () => {
  const cases: { name: string; read: () => unknown; want?: unknown; error?: RegExp }[] = [
    { name: 'unset string', read: () => readString('OPENWORKER_STATE_DIR', {}), want: undefined },
    {
      name: 'blank string',
      read: () => readString('OPENWORKER_STATE_DIR', { OPENWORKER_STATE_DIR: '  ' }),
      want: undefined,
    },
    {
      name: 'trimmed string',
      read: () => readString('OPENWORKER_STATE_DIR', { OPENWORKER_STATE_DIR: ' /tmp/x ' }),
      want: '/tmp/x',
    },
    {
      name: 'int default',
      read: () => readInt('OPENWORKER_QUERY_TIMEOUT_MS', { min: 1, fallback: 15_000 }, {}),
      want: 15_000,
    },
    {
      name: 'int value',
      read: () =>
        readInt('OPENWORKER_QUERY_TIMEOUT_MS', { min: 1, fallback: 15_000 }, { OPENWORKER_QUERY_TIMEOUT_MS: '2500' }),
      want: 2500,
    },
    {
      name: 'int not a number',
      read: () =>
        readInt('OPENWORKER_QUERY_TIMEOUT_MS', { min: 1, fallback: 15_000 }, { OPENWORKER_QUERY_TIMEOUT_MS: '15s' }),
      error: /^OPENWORKER_QUERY_TIMEOUT_MS must be a whole number 1-9007199254740991, got '15s' \(default 15000\)$/,
    },
    {
      name: 'int below the minimum',
      read: () =>
        readInt('OPENWORKER_QUERY_TIMEOUT_MS', { min: 1, fallback: 15_000 }, { OPENWORKER_QUERY_TIMEOUT_MS: '0' }),
      error: /got '0'/,
    },
    {
      name: 'choice, any case',
      read: () =>
        readChoice('OPENWORKER_LOG_LEVEL', ['WARN', 'INFO'] as const, 'WARN', { OPENWORKER_LOG_LEVEL: 'info' }),
      want: 'INFO',
    },
    {
      name: 'choice, bad',
      read: () =>
        readChoice('OPENWORKER_LOG_LEVEL', ['WARN', 'INFO'] as const, 'WARN', { OPENWORKER_LOG_LEVEL: 'loud' }),
      error: /^OPENWORKER_LOG_LEVEL must be one of WARN, INFO, got 'loud'$/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      if (c.error) assert.throws(c.read, (err: Error) => c.error!.test(err.message) && !err.message.includes('\n'));
      else assert.equal(c.read(), c.want);
    });
  }
});
