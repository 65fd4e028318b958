import { Client, Connection } from '@temporalio/client';
import type { ConnectOptions } from '../runtime/connection';
import { resolveConnectConfig } from '../runtime/connection';
import { defaultDataConverter } from '../runtime/dataConverter';
import type { Settings } from '../runtime/settings';
import { processSettings } from '../runtime/settings';
import { clientTracing } from '../worker/telemetry';

export type { ConnectOptions, ResolvedConnectConfig } from '../runtime/connection';

export interface OpenWorkerClient {
  client: Client;
  /** The frontend address this client is connected to (for messages). */
  address: string;
  connection: Client['connection'];
  namespace: string;
  taskQueue: string;
  /** What the library's functions read instead of the environment (OPENWORKER_USER, OPENWORKER_QUERY_TIMEOUT_MS, …). */
  settings: Settings;
  close(): Promise<void>;
}

/**
 * Connects a client; the error says which address failed and how to start a server. An entry point:
 * the settings are `options.settings`, else read from the environment now, once.
 */
export async function connectClient(options: ConnectOptions = {}): Promise<OpenWorkerClient> {
  const settings = options.settings ?? processSettings();
  const cfg = resolveConnectConfig(options, settings);
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
    throw new Error(
      `cannot reach Temporal at ${cfg.address} (${(err as Error).message}); start one with 'openworker-temporal server' or set TEMPORAL_ADDRESS`,
    );
  }
  // OTEL_* set: the workflows this client starts and signals carry its trace context (docs/observability.md).
  const tracing = clientTracing(settings.telemetry);
  const client = new Client({
    connection,
    namespace: cfg.namespace,
    dataConverter: defaultDataConverter(settings),
    ...(tracing ? { interceptors: { workflow: [tracing.interceptor] } } : {}),
  });
  return {
    client,
    connection,
    address: cfg.address,
    namespace: cfg.namespace,
    taskQueue: cfg.taskQueue,
    settings,
    close: async () => {
      await connection.close();
      await tracing?.flush();
    },
  };
}
