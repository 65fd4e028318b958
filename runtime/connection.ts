import { loadClientConnectConfig } from '@temporalio/envconfig';
import { DEFAULT_TASK_QUEUE } from '../workflows/definitions';
import type { Settings } from './settings';

/** Where to find Temporal: explicit options win, then the standard TEMPORAL_* variables and config profile. */
export interface ConnectOptions {
  address?: string;
  namespace?: string;
  taskQueue?: string;
  /** The settings to use instead of this process's environment (read when the client or worker is made). */
  settings?: Settings;
}

export interface ResolvedConnectConfig {
  address: string;
  namespace: string;
  taskQueue: string;
  tls?: unknown;
  apiKey?: string;
  metadata?: Record<string, string>;
}

/** `options` win over `settings` (OPENWORKER_TASK_QUEUE, and its env's TEMPORAL_* and config profile). */
export function resolveConnectConfig(options: ConnectOptions, settings: Settings): ResolvedConnectConfig {
  let fromEnv: ReturnType<typeof loadClientConnectConfig> | undefined;
  try {
    fromEnv = loadClientConnectConfig({ overrideEnvVars: settings.env as Record<string, string> });
  } catch (err) {
    throw new Error(
      `cannot read the Temporal client configuration (TEMPORAL_* variables or config file): ${(err as Error).message}`,
    );
  }
  const c = fromEnv.connectionOptions;
  return {
    address: options.address ?? c.address ?? 'localhost:7233',
    namespace: options.namespace ?? fromEnv.namespace ?? 'default',
    taskQueue: options.taskQueue ?? settings.taskQueue ?? DEFAULT_TASK_QUEUE,
    ...(c.tls ? { tls: c.tls } : {}),
    ...(c.apiKey && typeof c.apiKey === 'string' ? { apiKey: c.apiKey } : {}),
    ...(c.metadata ? { metadata: c.metadata as Record<string, string> } : {}),
  };
}
