import { homedir, userInfo } from 'node:os';
import path from 'node:path';
import type { Env } from './config';
import { readChoice, readInt, readString } from './config';
import type { Limits } from './limitsConfig';
import { limitsFromEnv } from './limitsConfig';
import type { PayloadStoreConfig } from './payloadStorage';
import type { PaymentsConfig } from './paymentsConfig';
import { paymentsConfigFromEnv } from './paymentsConfig';
import type { TelemetrySettings } from './telemetry';
import { telemetryFrom } from './telemetry';
import { payloadStoreConfig } from './payloadStorage';
import type { SmtpConfig } from './smtpConfig';
import { smtpConfigFromEnv } from './smtpConfig';
import { DEFAULT_CONTEXT_TOKENS } from '../workflows/context';
import { stateDirFor } from './stateDir';
import type { DeploymentVersion } from './deployment';
import { deploymentVersion } from './deployment';

/**
 * Every setting of the project, parsed and validated once at an entry point (the CLI, createWorker,
 * OpenWorkerPlugin, connectClient, openWorkerClient, the approvals app, the dev launcher) and passed
 * down. An explicit option wins over a setting; a setting over its default. Modules below the entry
 * points take what they need from here and never read the environment themselves.
 */
export interface Settings {
  /** OPENWORKER_STATE_DIR, resolved: where local state lives. */
  stateDir: string;
  /** OPENWORKER_TASK_QUEUE; undefined means the default queue. */
  taskQueue?: string;
  /** The model `dev` and `worker` use without `--model`: OPENWORKER_MODEL, else a provider with a key set, else demo. */
  modelSpec: string;
  /** Who decides when no `by` is given: OPENWORKER_USER, else USER, else 'cli'. */
  user: string;
  /** OPENWORKER_QUERY_TIMEOUT_MS. */
  queryTimeoutMs: number;
  /** OPENWORKER_LOG_LEVEL. */
  logLevel: LogLevel;
  /** OPENWORKER_MAX_CACHED_WORKFLOWS. */
  maxCachedWorkflows: number;
  /** OPENWORKER_MAX_* (each else its DEFAULT_LIMITS value). */
  limits: Limits;
  /** OPENWORKER_CONTEXT_TOKENS: the compaction budget (else the model's window, else 100,000). */
  contextTokens?: number;
  /** OPENWORKER_SERVER_SYNC. */
  serverSync: 'normal' | 'full';
  /** OPENWORKER_PAYLOAD_STORE, parsed. */
  payloadStore: PayloadStoreConfig;
  /** Where payloads of old claim-check references are (OPENWORKER_LEGACY_PAYLOAD_DIR, else the directory store). */
  legacyPayloadDir: string;
  /** OPENWORKER_ENCRYPTION, _KEYS and _KEY_FILE, as given (the keys are read when a data converter is built). */
  encryption: EncryptionSettings;
  /** OPENWORKER_APPROVALS_TOKENS, resolved. */
  approvalsTokens: string;
  /** OPENWORKER_CODEC_TOKEN, checked; undefined means a fresh one per start. */
  codecToken?: string;
  /** OPENWORKER_APPROVERS: the approvers file. */
  approvers?: string;
  /** OPENWORKER_MCP: the MCP servers file. */
  mcp?: string;
  /** OPENWORKER_KEYS_DIR, else ~/.openworker/keys. */
  keysDir: string;
  /** OPENWORKER_APPROVER_KEY. */
  approverKey?: string;
  /** send_email: OPENWORKER_SMTP_HOST and the rest, when a host is set. */
  smtp?: SmtpConfig;
  /** create_payment: OPENWORKER_PAYMENTS_URL and the rest, when a URL is set. */
  payments?: PaymentsConfig;
  /** OPENWORKER_NOTIFY=on: parks of calls this worker plans schedule a notify activity (workflows/notifyParks.ts). */
  notify: boolean;
  /** OPENWORKER_DEPLOYMENT_NAME and OPENWORKER_BUILD_ID, checked: the version a worker polls as (undefined: unversioned). */
  deployment?: DeploymentVersion;
  /**
   * OPENWORKER_FAULTS as the process started, for `dev` to hand its first worker. The fault points
   * themselves read the variable when reached (activities/faults.ts).
   */
  faults?: string;
  /** Traces and metrics: the standard OTEL_* variables (runtime/telemetry.ts); empty when none is set. */
  telemetry: TelemetrySettings;
  /**
   * The environment these settings were read from, for what other libraries and processes read:
   * TEMPORAL_* (the Temporal client configuration), AWS_* (the S3 client), provider API keys,
   * `${VAR}` in MCP server files, and the environment of child processes.
   */
  env: Env;
}

export interface EncryptionSettings {
  mode?: 'on' | 'off';
  keys?: string;
  keyFile?: string;
}

/** The model `dev` and `worker` use when no `--model` is given: a configured provider, else the demo. */
export function defaultModelSpec(env: Env): string {
  const model = readString('OPENWORKER_MODEL', env);
  if (model) return model;
  if (env.OPENAI_API_KEY) return 'openai:gpt-4.1';
  if (env.ANTHROPIC_API_KEY) return 'anthropic:claude-sonnet-4-5';
  return 'demo';
}

export const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** OPENWORKER_LOG_LEVEL, any case; default WARN. */
export function logLevelFrom(env: Env): LogLevel {
  const level = (readString('OPENWORKER_LOG_LEVEL', env) ?? 'WARN').toUpperCase();
  if (!(LOG_LEVELS as readonly string[]).includes(level))
    throw new Error(`OPENWORKER_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got '${level}'`);
  return level as LogLevel;
}

export const DEFAULT_MAX_CACHED_WORKFLOWS = 100;

/** OPENWORKER_MAX_CACHED_WORKFLOWS' value: a whole number, 0 disables the cache. */
export function maxCachedWorkflowsFrom(raw: string | undefined): number {
  if (raw === undefined || raw === '') return DEFAULT_MAX_CACHED_WORKFLOWS;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`OPENWORKER_MAX_CACHED_WORKFLOWS must be a whole number (0 disables the cache), got '${raw}'`);
  return n;
}

export const CODEC_TOKEN_CHARS = /^[A-Za-z0-9._~-]{16,256}$/;

/** OPENWORKER_CODEC_TOKEN, checked; undefined when unset. */
export function codecTokenFrom(env: Env): string | undefined {
  const t = readString('OPENWORKER_CODEC_TOKEN', env);
  if (t && !CODEC_TOKEN_CHARS.test(t))
    throw new Error(
      "OPENWORKER_CODEC_TOKEN must be 16-256 letters, digits, '.', '_', '~' or '-' (it goes into a URL path)",
    );
  return t;
}

/** OPENWORKER_ENCRYPTION and its keys, as given. */
export function encryptionFrom(env: Env): EncryptionSettings {
  const raw = readString('OPENWORKER_ENCRYPTION', env);
  const mode = raw?.toLowerCase();
  if (mode && mode !== 'on' && mode !== 'off')
    throw new Error(`OPENWORKER_ENCRYPTION must be 'on' or 'off', got '${raw}'`);
  const keys = readString('OPENWORKER_ENCRYPTION_KEYS', env);
  const keyFile = readString('OPENWORKER_ENCRYPTION_KEY_FILE', env);
  return {
    ...(mode ? { mode: mode as 'on' | 'off' } : {}),
    ...(keys ? { keys } : {}),
    ...(keyFile ? { keyFile } : {}),
  };
}

/** One bad variable or several: each problem on its own line, every bad variable named at once. */
export class SettingsError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('\n'));
    this.name = 'SettingsError';
  }
}

/** The settings in `env`, each parsed and checked once; every bad variable is reported together. */
export function settingsFrom(env: Env): Settings {
  const problems: string[] = [];
  function parse<T>(read: () => T, fallback: T): T {
    try {
      return read();
    } catch (err) {
      problems.push((err as Error).message);
      return fallback;
    }
  }
  const stateDir = stateDirFor(readString('OPENWORKER_STATE_DIR', env));
  const payloadStore = parse(() => payloadStoreConfig(env), { kind: 'file', dir: path.join(stateDir, 'payloads') });
  const legacy = readString('OPENWORKER_LEGACY_PAYLOAD_DIR', env);
  const taskQueue = readString('OPENWORKER_TASK_QUEUE', env);
  const codecToken = parse(() => codecTokenFrom(env), undefined);
  const approvers = readString('OPENWORKER_APPROVERS', env);
  const mcp = readString('OPENWORKER_MCP', env);
  const approverKey = readString('OPENWORKER_APPROVER_KEY', env);
  const smtp = parse(() => smtpConfigFromEnv(env), undefined);
  const faults = readString('OPENWORKER_FAULTS', env);
  const payments = parse(() => paymentsConfigFromEnv(env), undefined);
  const deployment = parse(
    () =>
      deploymentVersion({
        deploymentName: readString('OPENWORKER_DEPLOYMENT_NAME', env),
        buildId: readString('OPENWORKER_BUILD_ID', env),
      }),
    undefined,
  );
  const contextTokens = parse(
    // Unset: the model's own window, else the default (activities/context.ts).
    () =>
      readString('OPENWORKER_CONTEXT_TOKENS', env) === undefined
        ? undefined
        : readInt('OPENWORKER_CONTEXT_TOKENS', { min: 1_000, fallback: DEFAULT_CONTEXT_TOKENS }, env),
    undefined,
  );
  const settings: Settings = {
    stateDir,
    ...(taskQueue ? { taskQueue } : {}),
    modelSpec: defaultModelSpec(env),
    user: readString('OPENWORKER_USER', env) ?? loginName(env),
    queryTimeoutMs: parse(() => readInt('OPENWORKER_QUERY_TIMEOUT_MS', { min: 1, fallback: 15_000 }, env), 15_000),
    logLevel: parse(() => logLevelFrom(env), 'WARN'),
    maxCachedWorkflows: parse(
      () => maxCachedWorkflowsFrom(readString('OPENWORKER_MAX_CACHED_WORKFLOWS', env)),
      DEFAULT_MAX_CACHED_WORKFLOWS,
    ),
    limits: parse(() => limitsFromEnv(env), limitsFromEnv({})),
    ...(contextTokens ? { contextTokens } : {}),
    serverSync: parse(() => readChoice('OPENWORKER_SERVER_SYNC', ['normal', 'full'] as const, 'normal', env), 'normal'),
    payloadStore,
    legacyPayloadDir: legacy
      ? path.resolve(legacy)
      : payloadStore.kind === 'file'
        ? payloadStore.dir
        : path.join(stateDir, 'payloads'),
    encryption: parse(() => encryptionFrom(env), {}),
    approvalsTokens: path.resolve(
      readString('OPENWORKER_APPROVALS_TOKENS', env) ?? path.join(stateDir, 'approvals-tokens.json'),
    ),
    ...(codecToken ? { codecToken } : {}),
    ...(approvers ? { approvers } : {}),
    ...(mcp ? { mcp } : {}),
    keysDir: readString('OPENWORKER_KEYS_DIR', env) ?? path.join(homedir(), '.openworker', 'keys'),
    ...(approverKey ? { approverKey } : {}),
    ...(smtp ? { smtp } : {}),
    ...(payments ? { payments } : {}),
    telemetry: parse(() => telemetryFrom(env), {}),
    notify: parse(() => readChoice('OPENWORKER_NOTIFY', ['on', 'off'] as const, 'off', env), 'off') === 'on',
    ...(deployment ? { deployment } : {}),
    ...(faults ? { faults } : {}),
    env,
  };
  if (problems.length) throw new SettingsError(problems);
  return settings;
}

/**
 * The settings of this process, read now: the default of each library entry point when its caller
 * passes none. Read at the call, not at load, so a process (or a test) that sets a variable before
 * creating a worker or a client gets it. Only entry points call this (test/unit/settings.test.ts).
 */
export function processSettings(): Settings {
  return settingsFrom(process.env);
}

/** Settings as given, else the ones in `env`, else the process's: for entry points that took an env before. */
export function asSettings(given?: Settings | Env): Settings {
  if (given === undefined) return processSettings();
  return isSettings(given) ? given : settingsFrom(given);
}

function isSettings(x: Settings | Env): x is Settings {
  const env = (x as { env?: unknown }).env;
  return typeof env === 'object' && env !== null && typeof (x as { stateDir?: unknown }).stateDir === 'string';
}

/**
 * Who decides when no name is given (after OPENWORKER_USER): the login name (USER, LOGNAME, else the
 * account's, which a container without USER still has), so a decision is never recorded under a
 * made-up name. `dev` signs the approvals app in under it too.
 */
function loginName(env: Env): string {
  if (env.USER) return env.USER;
  if (env.LOGNAME) return env.LOGNAME;
  try {
    return userInfo().username || 'cli';
  } catch {
    return 'cli'; // an account without a passwd entry
  }
}
