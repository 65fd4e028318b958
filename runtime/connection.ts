import { loadClientConnectConfig } from '@temporalio/envconfig';
import { DEFAULT_TASK_QUEUE } from '../workflows/definitions';
import { readString } from './config';

/** Where to find Temporal: explicit options win, then the standard TEMPORAL_* variables and config profile. */
export interface ConnectOptions {
  address?: string;
  namespace?: string;
  taskQueue?: string;
}

export interface ResolvedConnectConfig {
  address: string;
  namespace: string;
  taskQueue: string;
  tls?: unknown;
  apiKey?: string;
  metadata?: Record<string, string>;
}

export function resolveConnectConfig(options: ConnectOptions = {}): ResolvedConnectConfig {
  let fromEnv: ReturnType<typeof loadClientConnectConfig> | undefined;
  try {
    fromEnv = loadClientConnectConfig();
  } catch (err) {
    throw new Error(
      `cannot read the Temporal client configuration (TEMPORAL_* variables or config file): ${(err as Error).message}`,
    );
  }
  const c = fromEnv.connectionOptions;
  return {
    address: options.address ?? c.address ?? 'localhost:7233',
    namespace: options.namespace ?? fromEnv.namespace ?? 'default',
    taskQueue: options.taskQueue ?? readString('OPENWORKER_TASK_QUEUE') ?? DEFAULT_TASK_QUEUE,
    ...(c.tls ? { tls: c.tls } : {}),
    ...(c.apiKey && typeof c.apiKey === 'string' ? { apiKey: c.apiKey } : {}),
    ...(c.metadata ? { metadata: c.metadata as Record<string, string> } : {}),
  };
}
