import { Client, Connection } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import { DEFAULT_TASK_QUEUE } from '../workflows/definitions';
import { defaultDataConverter } from './encryption';

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
    throw new Error(`cannot read the Temporal client configuration (TEMPORAL_* variables or config file): ${(err as Error).message}`);
  }
  const c = fromEnv.connectionOptions;
  return {
    address: options.address ?? c.address ?? 'localhost:7233',
    namespace: options.namespace ?? fromEnv.namespace ?? 'default',
    taskQueue: options.taskQueue ?? process.env.OPENWORKER_TASK_QUEUE ?? DEFAULT_TASK_QUEUE,
    ...(c.tls ? { tls: c.tls } : {}),
    ...(c.apiKey && typeof c.apiKey === 'string' ? { apiKey: c.apiKey } : {}),
    ...(c.metadata ? { metadata: c.metadata as Record<string, string> } : {}),
  };
}

export interface OpenWorkerClient {
  client: Client;
  /** The frontend address this client is connected to (for messages). */
  address: string;
  connection: Connection;
  namespace: string;
  taskQueue: string;
  close(): Promise<void>;
}

/** Connects a client; the error says which address failed and how to start a server. */
export async function connectClient(options: ConnectOptions = {}): Promise<OpenWorkerClient> {
  const cfg = resolveConnectConfig(options);
  let connection: Connection;
  try {
    connection = await Connection.connect({
      address: cfg.address,
      ...(cfg.tls ? { tls: cfg.tls as never } : {}),
      ...(cfg.apiKey ? { apiKey: cfg.apiKey } : {}),
      ...(cfg.metadata ? { metadata: cfg.metadata } : {}),
      connectTimeout: '5s',
    });
  } catch (err) {
    throw new Error(`cannot reach Temporal at ${cfg.address} (${(err as Error).message}); start one with 'openworker-temporal server' or set TEMPORAL_ADDRESS`);
  }
  const client = new Client({ connection, namespace: cfg.namespace, dataConverter: defaultDataConverter() });
  return { client, connection, address: cfg.address, namespace: cfg.namespace, taskQueue: cfg.taskQueue, close: () => connection.close() };
}
