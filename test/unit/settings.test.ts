import { strict as assert } from 'node:assert';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { readChoice, readInt, readString } from '../../runtime/config';
import type { Settings } from '../../runtime/settings';
import { SettingsError, settingsFrom } from '../../runtime/settings';
import { DEFAULT_LIMITS } from '../../runtime/limitsConfig';

// Settings are read once, at an entry point, and passed down (runtime/settings.ts): the table of
// what settingsFrom makes of an environment, and a guard that keeps the environment out of the rest.

const ROOT = join(__dirname, '..', '..', '..');
const SOURCE_DIRS = ['workflows', 'activities', 'runtime', 'worker', 'client', 'cli', 'apps', 'dev', 'api'];

/** The files that may read process.env, and why. */
const READS_PROCESS_ENV: Record<string, string> = {
  'runtime/settings.ts': 'processSettings(): settingsFrom(process.env), the default of every library entry point',
  'cli/main.ts': "the CLI's entry point reads its settings before a command runs",
  'api/fromEnv.ts': "public functions (loadModel, smtpConfigFromEnv…) whose env defaults to the process's",
  'activities/faults.ts': 'a fault point reads OPENWORKER_FAULTS when reached: bench/worker.ts arms one on SIGUSR2',
  'runtime/payloadStorage.ts': 'a write: silences the AWS SDK warning before loading it',
  'dev/mailSinkMain.ts': "the mail sink's main: its flags default to the environment",
  'dev/paymentsApiMain.ts': "the payments API's main: its flags default to the environment",
};

/** The entry points that read this process's settings when their caller passes none. */
const ENTRY_POINTS = [
  'runtime/settings.ts',
  'runtime/dataConverter.ts', // defaultDataConverter, defaultPayloadCodecs, endpointCodec
  'client/connection.ts', // connectClient
  'client/own.ts', // openWorkerClient
  'worker/plugin.ts', // OpenWorkerPlugin, pluginParts
  'worker/worker.ts', // createWorker
  'dev/server.ts', // startDevServer
];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** Each line of code (comments dropped) of the production sources under `root`, with where it is. */
export function codeLines(root: string): { file: string; where: string; line: string }[] {
  const files = [join(root, 'index.ts'), ...SOURCE_DIRS.flatMap((d) => sources(join(root, d)))];
  return files.flatMap((f) => {
    const file = f
      .slice(root.length + 1)
      .split('\\')
      .join('/');
    return readFileSync(f, 'utf8')
      .split('\n')
      .map((line, i) => ({ file, where: `${file}:${i + 1}`, line }))
      .filter(({ line }) => !/^\s*(\/\/|\*|\/\*)/.test(line));
  });
}

/** Lines outside the allowed files that read process.env or this process's settings. */
export function envReadsOutsideEntryPoints(root: string): string[] {
  return codeLines(root)
    .filter(
      ({ file, line }) =>
        (/\bprocess\.env\b/.test(line) && !(file in READS_PROCESS_ENV)) ||
        (/\b(processSettings|asSettings)\(/.test(line) && !ENTRY_POINTS.includes(file)),
    )
    .map(({ where, line }) => `${where}: ${line.trim()}`);
}

describe('settings: read at the entry points, passed down', () => {
  it('no module below the entry points reads process.env or the process settings', () => {
    assert.deepEqual(envReadsOutsideEntryPoints(ROOT), []);
  });

  it('the readers take the environment they read: none defaults to process.env', () => {
    // A parameter with a default is not counted in a function's length.
    assert.deepEqual([readString.length, readInt.length, readChoice.length], [2, 3, 4]);
  });

  it('every file the lists name exists (a list cannot keep a file it no longer needs)', () => {
    const files = new Set(codeLines(ROOT).map((l) => l.file));
    const reading = new Set(
      codeLines(ROOT)
        .filter((l) => /\bprocess\.env\b/.test(l.line))
        .map((l) => l.file),
    );
    assert.deepEqual(
      Object.keys(READS_PROCESS_ENV).filter((f) => !reading.has(f)),
      [],
      'allowed to read process.env but does not',
    );
    assert.deepEqual(
      ENTRY_POINTS.filter((f) => !files.has(f)),
      [],
    );
  });
});

describe('settings: settingsFrom', () => {
  const base = settingsFrom({ OPENWORKER_STATE_DIR: '/s' });

  it('defaults, from an empty environment', () => {
    const s = settingsFrom({ OPENWORKER_STATE_DIR: '/s', USER: 'ann' });
    const want: Omit<Settings, 'env'> = {
      stateDir: '/s',
      modelSpec: 'demo',
      user: 'ann',
      queryTimeoutMs: 15_000,
      logLevel: 'WARN',
      maxCachedWorkflows: 100,
      limits: { ...DEFAULT_LIMITS },
      serverSync: 'normal',
      payloadStore: { kind: 'file', dir: '/s/payloads' },
      legacyPayloadDir: '/s/payloads',
      encryption: {},
      approvalsTokens: '/s/approvals-tokens.json',
      keysDir: join(homedir(), '.openworker', 'keys'),
      notify: false,
      telemetry: {},
    };
    const { env: _env, ...got } = s;
    assert.deepEqual(got, want);
    assert.equal(settingsFrom({}).user, userInfo().username, 'no OPENWORKER_USER, USER or LOGNAME: the account');
    assert.equal(settingsFrom({ LOGNAME: 'lee' }).user, 'lee', 'LOGNAME when USER is unset');
  });

  const good: [string, Record<string, string>, Partial<Settings>][] = [
    ['a task queue', { OPENWORKER_TASK_QUEUE: ' q1 ' }, { taskQueue: 'q1' }],
    ['a model', { OPENWORKER_MODEL: 'openai:gpt-4.1' }, { modelSpec: 'openai:gpt-4.1' }],
    ['a provider key picks the model', { ANTHROPIC_API_KEY: 'k' }, { modelSpec: 'anthropic:claude-sonnet-4-5' }],
    ['OPENWORKER_USER over USER', { OPENWORKER_USER: 'bob', USER: 'ann' }, { user: 'bob' }],
    ['a query timeout', { OPENWORKER_QUERY_TIMEOUT_MS: '2500' }, { queryTimeoutMs: 2500 }],
    ['a log level in any case', { OPENWORKER_LOG_LEVEL: 'debug' }, { logLevel: 'DEBUG' }],
    ['no workflow cache', { OPENWORKER_MAX_CACHED_WORKFLOWS: '0' }, { maxCachedWorkflows: 0 }],
    ['one limit', { OPENWORKER_MAX_TOOL_CALLS: '8' }, { limits: { ...DEFAULT_LIMITS, maxToolCalls: 8 } }],
    ['full sync', { OPENWORKER_SERVER_SYNC: 'FULL' }, { serverSync: 'full' }],
    [
      'an S3 store: old references in the state dir',
      { OPENWORKER_PAYLOAD_STORE: 's3://bucket/p/' },
      { payloadStore: { kind: 's3', bucket: 'bucket', prefix: 'p' }, legacyPayloadDir: '/s/payloads' },
    ],
    [
      'a directory store holds the old references too',
      { OPENWORKER_PAYLOAD_STORE: '/data/p' },
      { payloadStore: { kind: 'file', dir: '/data/p' }, legacyPayloadDir: '/data/p' },
    ],
    ['a legacy directory', { OPENWORKER_LEGACY_PAYLOAD_DIR: 'old' }, { legacyPayloadDir: resolve('old') }],
    ['encryption off', { OPENWORKER_ENCRYPTION: 'OFF' }, { encryption: { mode: 'off' } }],
    ['a key file', { OPENWORKER_ENCRYPTION_KEY_FILE: '/k.json' }, { encryption: { keyFile: '/k.json' } }],
    ['a tokens file', { OPENWORKER_APPROVALS_TOKENS: '/t.json' }, { approvalsTokens: '/t.json' }],
    ['a codec token', { OPENWORKER_CODEC_TOKEN: 'abcdefghijklmnop' }, { codecToken: 'abcdefghijklmnop' }],
    [
      'files and keys',
      { OPENWORKER_APPROVERS: 'a.json', OPENWORKER_MCP: 'm.json' },
      { approvers: 'a.json', mcp: 'm.json' },
    ],
    [
      'a keys dir and key',
      { OPENWORKER_KEYS_DIR: '/k', OPENWORKER_APPROVER_KEY: 'al' },
      { keysDir: '/k', approverKey: 'al' },
    ],
    ['notifications on', { OPENWORKER_NOTIFY: 'ON' }, { notify: true }],
    [
      'a deployment version',
      { OPENWORKER_DEPLOYMENT_NAME: 'agents', OPENWORKER_BUILD_ID: ' 2026-12-07.a1b2c3 ' },
      { deployment: { deploymentName: 'agents', buildId: '2026-12-07.a1b2c3' } },
    ],
    ['faults as started', { OPENWORKER_FAULTS: 'tool.before_dispatch' }, { faults: 'tool.before_dispatch' }],
    [
      'SMTP, secure',
      { OPENWORKER_SMTP_HOST: 'mail', OPENWORKER_SMTP_SECURE: '1' },
      {
        smtp: {
          host: 'mail',
          port: 465,
          secure: true,
          user: undefined,
          pass: undefined,
          from: 'openworker@localhost',
          lookupUrl: undefined,
        },
      },
    ],
    [
      'payments',
      { OPENWORKER_PAYMENTS_URL: 'http://pay/', OPENWORKER_PAYMENTS_RECOVERY: 'reconcile' },
      { payments: { url: 'http://pay', recovery: 'reconcile' } },
    ],
  ];
  for (const [name, env, want] of good) {
    it(`${name}`, () => {
      const s = settingsFrom({ OPENWORKER_STATE_DIR: '/s', ...env });
      for (const [key, value] of Object.entries(want)) assert.deepEqual(s[key as keyof Settings], value, key);
      // Nothing else moved.
      for (const key of Object.keys(base) as (keyof Settings)[])
        if (!(key in want) && key !== 'env' && key !== 'modelSpec' && key !== 'user')
          assert.deepEqual(s[key], base[key], key);
    });
  }

  // Each kind of bad value: a line that names the variable and what it must be.
  const bad: [string, Record<string, string>, RegExp][] = [
    ['not a number', { OPENWORKER_QUERY_TIMEOUT_MS: '15s' }, /^OPENWORKER_QUERY_TIMEOUT_MS must be a whole number 1-/],
    [
      'a build ID alone',
      { OPENWORKER_BUILD_ID: 'b1' },
      /needs a deployment name: set `deploymentName` or OPENWORKER_DEPLOYMENT_NAME/,
    ],
    ['below the minimum', { OPENWORKER_QUERY_TIMEOUT_MS: '0' }, /^OPENWORKER_QUERY_TIMEOUT_MS .* got '0'/],
    ['a negative cache', { OPENWORKER_MAX_CACHED_WORKFLOWS: '-1' }, /^OPENWORKER_MAX_CACHED_WORKFLOWS must be a whole/],
    ['a limit of zero', { OPENWORKER_MAX_ARGS_BYTES: '0' }, /^OPENWORKER_MAX_ARGS_BYTES must be a positive whole/],
    [
      'not a choice',
      { OPENWORKER_SERVER_SYNC: 'off' },
      /^OPENWORKER_SERVER_SYNC must be one of normal, full, got 'off'$/,
    ],
    ['notify', { OPENWORKER_NOTIFY: 'yes' }, /^OPENWORKER_NOTIFY must be one of on, off, got 'yes'$/],
    ['a log level', { OPENWORKER_LOG_LEVEL: 'loud' }, /^OPENWORKER_LOG_LEVEL must be one of TRACE, .*, got 'LOUD'$/],
    ['a switch', { OPENWORKER_ENCRYPTION: 'of' }, /^OPENWORKER_ENCRYPTION must be 'on' or 'off', got 'of'$/],
    [
      'a store scheme',
      { OPENWORKER_PAYLOAD_STORE: 'gs://b' },
      /^OPENWORKER_PAYLOAD_STORE: 'gs:\/\/b' is not supported/,
    ],
    ['a token', { OPENWORKER_CODEC_TOKEN: 'a/b' }, /^OPENWORKER_CODEC_TOKEN must be 16-256 letters/],
    ['a port', { OPENWORKER_SMTP_HOST: 'm', OPENWORKER_SMTP_PORT: '70000' }, /^OPENWORKER_SMTP_PORT must be a port/],
    ['a boolean', { OPENWORKER_SMTP_HOST: 'm', OPENWORKER_SMTP_SECURE: 'yes' }, /^OPENWORKER_SMTP_SECURE must be true/],
    ['a URL', { OPENWORKER_PAYMENTS_URL: 'pay' }, /^OPENWORKER_PAYMENTS_URL must be an http\(s\) URL$/],
    [
      'a recovery policy',
      { OPENWORKER_PAYMENTS_URL: 'http://p', OPENWORKER_PAYMENTS_RECOVERY: 'maybe' },
      /^OPENWORKER_PAYMENTS_RECOVERY must be one of idempotent, reconcile, manual, got 'maybe'$/,
    ],
    [
      'a pair that needs its other half',
      { OPENWORKER_SMTP_HOST: 'm', OPENWORKER_SMTP_RECOVERY: 'reconcile' },
      /^OPENWORKER_SMTP_RECOVERY=reconcile needs OPENWORKER_SMTP_LOOKUP_URL/,
    ],
  ];
  for (const [name, env, why] of bad) {
    it(`refuses ${name} in one line`, () =>
      assert.throws(
        () => settingsFrom(env),
        (err: Error) => err instanceof SettingsError && why.test(err.message) && !err.message.includes('\n'),
      ));
  }

  it('names every bad variable at once, a line each, in one error', () => {
    assert.throws(
      () =>
        settingsFrom({
          OPENWORKER_QUERY_TIMEOUT_MS: 'soon',
          OPENWORKER_SERVER_SYNC: 'sometimes',
          OPENWORKER_SMTP_HOST: 'm',
          OPENWORKER_SMTP_PORT: 'x',
          OPENWORKER_LOG_LEVEL: 'loud',
        }),
      (err: SettingsError) => {
        assert.deepEqual(
          err.problems.map((p) => p.split(' ')[0]),
          ['OPENWORKER_SMTP_PORT', 'OPENWORKER_QUERY_TIMEOUT_MS', 'OPENWORKER_LOG_LEVEL', 'OPENWORKER_SERVER_SYNC'],
        );
        assert.equal(err.message.split('\n').length, 4);
        return true;
      },
    );
  });

  it('reads the environment it is given, nothing else', () => {
    const env = { OPENWORKER_TASK_QUEUE: 'mine' };
    assert.equal(settingsFrom(env).taskQueue, 'mine');
    assert.equal(settingsFrom(env).env, env, 'kept for what other libraries read (TEMPORAL_*, AWS_*, API keys)');
  });
});
