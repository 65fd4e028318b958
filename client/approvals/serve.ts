import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { OpenWorkerClient } from '../connection';
import { approvalsApp, type ApprovalsOptions } from './app';

export interface ApprovalsServer {
  url: string;
  close(): Promise<void>;
}

/** Serves the approvals app on host:port (port 0: any free one) until closed. */
export async function startApprovalsServer(
  client: OpenWorkerClient,
  opts: Omit<ApprovalsOptions, 'client'> & { port?: number; host?: string } = {},
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
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}
