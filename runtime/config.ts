/**
 * Every OPENWORKER_* variable the project reads, declared once: its name, what it sets and its
 * default (docs/configuration.md is the reader's version; a unit test keeps the two in step). They
 * are parsed once per entry point into a typed Settings object (runtime/settings.ts) through the
 * typed readers below, which answer a bad value with one line that names the variable, what it must
 * be and what it got. The readers take the environment as an argument: nothing reads process.env here.
 */
export const SETTINGS = {
  OPENWORKER_STATE_DIR:
    'where local state lives (default .openworker/ in the checkout, or in the current directory when installed)',
  OPENWORKER_TASK_QUEUE: "the task queue (default 'openworker')",
  OPENWORKER_MODEL: 'the model spec (default: a provider with a key set, else demo)',
  OPENWORKER_USER: 'who decides, for unsigned decisions (default $USER)',
  OPENWORKER_QUERY_TIMEOUT_MS: 'how long the CLI waits for a worker to answer a query (default 15000)',
  OPENWORKER_CONTEXT_TOKENS:
    "the budget of what the model sees, in tokens: over 80% the turn compacts older messages into a summary (default: the model's window, else 100000)",
  OPENWORKER_LOG_LEVEL: 'the worker log level (default WARN)',
  OPENWORKER_MAX_CACHED_WORKFLOWS: 'turns a worker keeps in memory (default 100; 0 disables the cache)',
  OPENWORKER_MAX_ARGS_BYTES: 'largest tool arguments (default 65536)',
  OPENWORKER_MAX_RESULT_BYTES: 'largest tool result kept whole (default 262144)',
  OPENWORKER_MAX_TOOL_CALLS: 'tool calls per model response (default 64)',
  OPENWORKER_MAX_MODEL_TEXT_BYTES: 'largest model text (default 65536)',
  OPENWORKER_SERVER_SYNC:
    "the dev server's SQLite sync: normal (default; a commit survives any process crash) or full (also a power cut)",
  OPENWORKER_PAYLOAD_STORE:
    'where payloads of 16 KiB or more are kept: s3://bucket/prefix or a directory (default <state dir>/payloads)',
  OPENWORKER_LEGACY_PAYLOAD_DIR:
    'where payloads of old claim-check references are (default: the payload directory, else <state dir>/payloads)',
  OPENWORKER_ENCRYPTION: "'off' turns payload encryption off",
  OPENWORKER_ENCRYPTION_KEYS: 'payload encryption keys, id=base64[,id2=base64]',
  OPENWORKER_ENCRYPTION_KEY_FILE: 'a JSON file of payload encryption keys',
  OPENWORKER_APPROVALS_TOKENS:
    "the approvals app's operator tokens, hashed (default <state dir>/approvals-tokens.json)",
  OPENWORKER_CODEC_TOKEN: "the codec endpoint's token (default: a fresh one per start)",
  OPENWORKER_APPROVERS: "the worker's approvers file (public keys and policy)",
  OPENWORKER_MCP: "the worker's MCP servers file (default for --mcp)",
  OPENWORKER_KEYS_DIR: 'where the CLI keeps approver key pairs (default ~/.openworker/keys)',
  OPENWORKER_APPROVER_KEY: 'which approver key signs (default: the only one)',
  OPENWORKER_SMTP_HOST: "send_email's SMTP server",
  OPENWORKER_SMTP_PORT: 'its port (default 587, or 465 when secure)',
  OPENWORKER_SMTP_SECURE: 'TLS from the start: true, 1, false or 0',
  OPENWORKER_SMTP_USER: 'its login',
  OPENWORKER_SMTP_PASS: 'its password',
  OPENWORKER_SMTP_FROM: 'the sender (default openworker@localhost)',
  OPENWORKER_SMTP_LOOKUP_URL: "the mail system's lookup URL; set, send_email reconciles",
  OPENWORKER_SMTP_TIMEOUT: 'upper bound for one send (default 2m)',
  OPENWORKER_SMTP_RECOVERY:
    'with a lookup URL: reconcile (default) or manual (a person decides; a retry asks the lookup first)',
  OPENWORKER_PAYMENTS_URL: "create_payment's API",
  OPENWORKER_PAYMENTS_RECOVERY: 'its recovery policy (default idempotent)',
  OPENWORKER_PAYMENTS_KEY_RETENTION: 'how long the API keeps idempotency keys',
  OPENWORKER_PAYMENTS_TIMEOUT: 'upper bound for one attempt',
  OPENWORKER_NOTIFY:
    "'on': a worker plans calls with `notify`, so each of their parks schedules a notify activity for the approvals app's notifiers (default off)",
  OPENWORKER_DEPLOYMENT_NAME:
    "Worker Deployment Versioning: the worker's deployment (with OPENWORKER_BUILD_ID; default: unversioned)",
  OPENWORKER_BUILD_ID: "Worker Deployment Versioning: the worker's build ID within its deployment",
  OPENWORKER_FAULTS: 'crash testing: fault points to stop at',
  OPENWORKER_FAULT_ACTION: "crash testing: 'kill' to SIGKILL at the point instead of stopping",
} as const;

export type Setting = keyof typeof SETTINGS;
/** An environment: process.env at an entry point, or a plain object in tests. */
export type Env = Readonly<Record<string, string | undefined>>;

/** The variable's value, trimmed; undefined when unset or blank. */
export function readString(name: Setting, env: Env): string | undefined {
  const v = env[name]?.trim();
  return v ? v : undefined;
}

/** A whole number in [min, max], or `fallback` when unset. */
export function readInt(name: Setting, opts: { min?: number; max?: number; fallback: number }, env: Env): number {
  const raw = readString(name, env);
  if (raw === undefined) return opts.fallback;
  const n = Number(raw);
  const min = opts.min ?? 0;
  const max = opts.max ?? Number.MAX_SAFE_INTEGER;
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new Error(
      `${name} must be a whole number ${min}-${max}, got '${raw.slice(0, 60)}' (default ${opts.fallback})`,
    );
  }
  return n;
}

/** One of `choices` (case-insensitive), or `fallback` when unset. */
export function readChoice<T extends string>(name: Setting, choices: readonly T[], fallback: T, env: Env): T {
  const raw = readString(name, env);
  if (raw === undefined) return fallback;
  const hit = choices.find((c) => c.toLowerCase() === raw.toLowerCase());
  if (!hit) throw new Error(`${name} must be one of ${choices.join(', ')}, got '${raw.slice(0, 60)}'`);
  return hit;
}
