import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PayloadCodec } from '@temporalio/common';
import { combinedCodec, defaultPayloadCodecs } from './encryption';

/**
 * A codec endpoint for the Temporal Web UI (`temporal server start-dev --ui-codec-endpoint`): the
 * browser posts the payloads it shows to `/decode`, and gets stored transcripts back instead of
 * claim-check references. Loopback only; it answers the UI's origin.
 */

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

const b64 = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? new Uint8Array()).toString('base64');
const bytes = (s: string | undefined) => new Uint8Array(Buffer.from(s ?? '', 'base64'));

const LOOPBACK_HOST = /^(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/;
const MAX_BODY = 64 * 1024 * 1024;
const LOOPBACK_ORIGIN = /^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/;

export interface CodecServer {
  url: string;
  close(): Promise<void>;
}

export async function startCodecServer(opts: { port?: number; codec?: PayloadCodec; allowOrigin?: string } = {}): Promise<CodecServer> {
  const codec = opts.codec ?? combinedCodec(defaultPayloadCodecs());
  const server = http.createServer((req, res) => {
    // The UI sends credentials and its own headers (x-namespace, authorization…): a wildcard origin
    // is refused with credentials, so a loopback origin (the dev server's UI) is echoed back.
    const origin = typeof req.headers.origin === 'string' ? req.headers.origin : undefined;
    const allowed = opts.allowOrigin ?? (origin && LOOPBACK_ORIGIN.test(origin) ? origin : undefined);
    const cors: Record<string, string> = {
      ...(allowed ? { 'access-control-allow-origin': allowed, 'access-control-allow-credentials': 'true', vary: 'origin' } : {}),
      'access-control-allow-methods': 'POST, OPTIONS',
      'access-control-allow-headers': String(req.headers['access-control-request-headers'] ?? 'content-type, x-namespace'),
    };
    if (req.method === 'OPTIONS') return void res.writeHead(204, cors).end();
    // The UI adds query parameters (/decode?preserveStorageRefs=true): route on the path alone.
    const path = new URL(req.url ?? '/', 'http://codec').pathname.replace(/\/+$/, '');
    const op = req.method === 'POST' ? (path === '/decode' ? 'decode' : path === '/encode' ? 'encode' : undefined) : undefined;
    if (!op) return void res.writeHead(404, { ...cors, 'content-type': 'application/json' }).end('{"error":"POST /decode or /encode"}');
    const refuse = (status: number, error: string) => void res.writeHead(status, { ...cors, 'content-type': 'application/json' }).end(JSON.stringify({ error }));
    // A page elsewhere can send a "simple" POST without a preflight, and DNS rebinding can aim one
    // here: only JSON, to a loopback Host, of bounded size.
    if (!LOOPBACK_HOST.test(String(req.headers.host ?? ''))) return refuse(403, 'the codec endpoint answers on loopback hosts only');
    if (!/^application\/json\b/i.test(String(req.headers['content-type'] ?? ''))) return refuse(415, 'send application/json');
    let raw = '';
    let size = 0;
    req.setEncoding('utf8').on('data', (d: string) => {
      size += d.length;
      if (size > MAX_BODY) {
        refuse(413, `request body over ${MAX_BODY} bytes`);
        req.destroy();
      } else raw += d;
    });
    req.on('end', () => {
      if (size > MAX_BODY) return;
      void (async () => {
        try {
          const { payloads } = JSON.parse(raw) as { payloads: JsonPayload[] };
          const decoded = await codec[op](
            payloads.map((p) => ({ metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, bytes(v)])), data: bytes(p.data) })),
          );
          const body = { payloads: decoded.map((p) => ({ metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, b64(v)])), data: b64(p.data) })) };
          res.writeHead(200, { ...cors, 'content-type': 'application/json' }).end(JSON.stringify(body));
        } catch (err) {
          res.writeHead(400, { ...cors, 'content-type': 'application/json' }).end(JSON.stringify({ error: (err as Error).message }));
        }
      })();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
