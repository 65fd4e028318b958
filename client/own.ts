import { Client } from '@temporalio/client';
import type { Settings } from '../runtime/settings';
import { processSettings } from '../runtime/settings';
import { DEFAULT_TASK_QUEUE, PLUGIN_NAME } from '../workflows/definitions';
import type { OpenWorkerClient } from './connection';

// Your own Client (TLS, API keys, Cloud, interceptors) in every client function of this library.

/** What every client function takes: your `Client` (with OpenWorkerPlugin), or one from `connectClient`/`openWorkerClient`. */
export type ClientLike = Client | OpenWorkerClient;

/**
 * Your Client, for this library's functions. It must carry OpenWorkerPlugin, which gives it the
 * data converter the worker uses (encryption, payload store); `taskQueue` is where new sessions
 * start (default $OPENWORKER_TASK_QUEUE, else 'openworker'). Closing stays yours. An entry point: the
 * settings are `options.settings`, else read from the environment now, once.
 */
export function openWorkerClient(
  client: Client,
  options: { taskQueue?: string; settings?: Settings } = {},
): OpenWorkerClient {
  if (!(client instanceof Client) && !isClientShaped(client))
    throw new TypeError('openWorkerClient: pass a @temporalio/client Client');
  if (!client.options.plugins?.some((p) => p.name === PLUGIN_NAME))
    throw new Error(
      `this Client has no OpenWorkerPlugin, so it would not read or write payloads as the worker does (encryption, payload store); create it with new Client({ connection, namespace, plugins: [new OpenWorkerPlugin()] })`,
    );
  const settings = options.settings ?? processSettings();
  const address = (client.connection as { options?: { address?: string } }).options?.address ?? 'your Temporal server';
  return {
    client,
    connection: client.connection,
    address,
    namespace: client.options.namespace,
    taskQueue: options.taskQueue ?? settings.taskQueue ?? DEFAULT_TASK_QUEUE,
    settings,
    close: async () => undefined,
  };
}

/** A client function's first argument, as the library uses it. */
export function asOpenWorker(c: ClientLike): OpenWorkerClient {
  if (!('client' in c && 'taskQueue' in c)) return openWorkerClient(c as Client);
  // One built by hand before OpenWorkerClient carried its settings.
  return (c as Partial<OpenWorkerClient>).settings ? c : { ...c, settings: processSettings() };
}

// Another copy of @temporalio/client (a second install) fails instanceof but works the same.
function isClientShaped(c: unknown): c is Client {
  return typeof c === 'object' && c !== null && 'workflow' in c && 'options' in c && 'connection' in c;
}
