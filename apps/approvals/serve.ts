import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { OpenWorkerClient } from '../../client/connection';
import { randomUUID } from 'node:crypto';
import { approvalsApp, type ApprovalsOptions } from './app';
import { startNotifier } from './notifier';

export interface ApprovalsServer {
  url: string;
  close(): Promise<void>;
}

/** Serves the approvals app on host:port (port 0: any free one) until closed. */
export async function startApprovalsServer(
  client: OpenWorkerClient,
  opts: Omit<ApprovalsOptions, 'client'> & {
    port?: number;
    host?: string;
    /** Webhooks to POST to when a call parks (Slack-compatible). */
    notify?: string[];
    /** Where operators reach this app, for the links in notifications (default: the URL it listens on). */
    publicUrl?: string;
  } = {},
): Promise<ApprovalsServer> {
  const app = approvalsApp({ client, ...opts });
  const host = opts.host ?? '127.0.0.1';
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: opts.port ?? 8234, hostname: host }, () => resolve(s));
    s.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new Error(
              `cannot serve approvals: port ${opts.port} on ${host} is in use; pick another with --port (dev: --approvals-port)`,
            )
          : err,
      ),
    );
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  // An activity worker on the notify task queue: it takes the parks turns schedule (no inbox polling).
  const notifier = opts.notify?.length
    ? await startNotifier({
        client,
        urls: opts.notify,
        publicUrl: opts.publicUrl ?? url,
        replica: `approvals-${randomUUID().slice(0, 8)}`,
      }).catch(async (err: Error) => {
        await new Promise<void>((resolve) => server.close(() => resolve()));
        throw err;
      })
    : undefined;
  return {
    url,
    close: async () => {
      await notifier?.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      });
    },
  };
}
