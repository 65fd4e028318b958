import { Client } from '@temporalio/client';
import { readString } from '../runtime/config';
import { DEFAULT_TASK_QUEUE, PLUGIN_NAME } from '../workflows/definitions';
import type { OpenWorkerClient } from './connection';

// Your own Client (TLS, API keys, Cloud, interceptors) in every client function of this library.

/** What every client function takes: your `Client` (with OpenWorkerPlugin), or one from `connectClient`/`openWorkerClient`. */
export type ClientLike = Client | OpenWorkerClient;

/**
 * Your Client, for this library's functions. It must carry OpenWorkerPlugin, which gives it the
 * data converter the worker uses (encryption, payload store); `taskQueue` is where new sessions
 * start (default $OPENWORKER_TASK_QUEUE, else 'openworker'). Closing stays yours.
 */
export function openWorkerClient(client: Client, options: { taskQueue?: string } = {}): OpenWorkerClient {
  if (!(client instanceof Client) && !isClientShaped(client))
    throw new TypeError('openWorkerClient: pass a @temporalio/client Client');
  if (!client.options.plugins?.some((p) => p.name === PLUGIN_NAME))
    throw new Error(
      `this Client has no OpenWorkerPlugin, so it would not read or write payloads as the worker does (encryption, payload store); create it with new Client({ connection, namespace, plugins: [new OpenWorkerPlugin()] })`,
    );
  const address = (client.connection as { options?: { address?: string } }).options?.address ?? 'your Temporal server';
  return {
    client,
    connection: client.connection,
    address,
    namespace: client.options.namespace,
    taskQueue: options.taskQueue ?? readString('OPENWORKER_TASK_QUEUE') ?? DEFAULT_TASK_QUEUE,
    close: async () => undefined,
  };
}

/** A client function's first argument, as the library uses it. */
export function asOpenWorker(c: ClientLike): OpenWorkerClient {
  return 'client' in c && 'taskQueue' in c ? c : openWorkerClient(c as Client);
}

// Another copy of @temporalio/client (a second install) fails instanceof but works the same.
function isClientShaped(c: unknown): c is Client {
  return typeof c === 'object' && c !== null && 'workflow' in c && 'options' in c && 'connection' in c;
}
