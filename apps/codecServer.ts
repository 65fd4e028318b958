import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { PayloadCodec } from '@temporalio/common';
import { endpointCodec } from '../runtime/dataConverter';
import type { Env } from '../runtime/config';
import type { Settings } from '../runtime/settings';
import { CODEC_TOKEN_CHARS, codecTokenFrom } from '../runtime/settings';

/**
 * A codec endpoint for the Temporal Web UI (`temporal server start-dev --ui-codec-endpoint`): the
 * browser posts the payloads it shows to `/decode`, and gets them back decrypted, with external
 * storage references replaced by the stored payloads (S3 or a directory, as workers store them;
 * `?preserveStorageRefs=true` is ignored, so the UI shows the transcript, not a reference).
 * Loopback only; it answers the UI's origin.
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
  /** The bare endpoint: with a token, callers send `Authorization: Bearer <token>`. */
  url: string;
  /**
   * What to give the Web UI (`--ui-codec-endpoint`): `url/<token>` with a token, else `url`. The UI
   * posts to `<endpoint>/decode` and sends an Authorization header only with an OAuth login over
   * https, so the token rides in the path (the codec protocol routes on the last segment).
   */
  uiEndpoint: string;
  close(): Promise<void>;
}

/** A token for one start: 32 random bytes, URL-safe. */
export const newCodecToken = (): string => randomBytes(32).toString('base64url');

/** OPENWORKER_CODEC_TOKEN, else a fresh token. */
export function codecTokenFromEnv(env: Env): string {
  return codecTokenFrom(env) ?? newCodecToken();
}

// Hashing first gives equal-length inputs, so timingSafeEqual compares without leaking the length.
const digest = (s: string) => createHash('sha256').update(s).digest();
const sameToken = (given: string, token: Buffer) => timingSafeEqual(digest(given), token);

export async function startCodecServer(
  opts: { port?: number; codec?: PayloadCodec; allowOrigin?: string; token?: string; settings?: Settings } = {},
): Promise<CodecServer> {
  // Without a codec, the endpoint's of `settings`, else of this process's settings, read now.
  const codec = opts.codec ?? endpointCodec(opts.settings);
  if (opts.token !== undefined && !CODEC_TOKEN_CHARS.test(opts.token))
    throw new Error("codec endpoint token must be 16-256 letters, digits, '.', '_', '~' or '-'");
  const token = opts.token === undefined ? undefined : digest(opts.token);
  const server = http.createServer((req, res) => {
    // The UI sends credentials and its own headers (x-namespace, authorization…): a wildcard origin
    // is refused with credentials, so a loopback origin (the dev server's UI) is echoed back.
    const origin = typeof req.headers.origin === 'string' ? req.headers.origin : undefined;
    const allowed = opts.allowOrigin ?? (origin && LOOPBACK_ORIGIN.test(origin) ? origin : undefined);
    const cors: Record<string, string> = {
      ...(allowed
        ? { 'access-control-allow-origin': allowed, 'access-control-allow-credentials': 'true', vary: 'origin' }
        : {}),
      'access-control-allow-methods': 'POST, OPTIONS',
      'access-control-allow-headers': String(
        req.headers['access-control-request-headers'] ?? 'content-type, x-namespace, authorization',
      ),
    };
    // Preflights carry no credentials by design: they stay open, and only grant what is asked.
    if (req.method === 'OPTIONS') return void res.writeHead(204, cors).end();
    // The UI adds query parameters (/decode?preserveStorageRefs=true): route on the path alone;
    // anything before /decode or /encode is the path token (see uiEndpoint).
    const route = /^(?:\/([^/]*))?\/(decode|encode)$/.exec(
      new URL(req.url ?? '/', 'http://codec').pathname.replace(/\/+$/, ''),
    );
    // A path token only exists when the endpoint has one.
    const op =
      req.method === 'POST' && route && (token || route[1] === undefined)
        ? (route[2] as 'decode' | 'encode')
        : undefined;
    if (!op)
      return void res
        .writeHead(404, { ...cors, 'content-type': 'application/json' })
        .end('{"error":"POST /decode or /encode"}');
    const refuse = (status: number, error: string, headers: Record<string, string> = {}) =>
      void res
        .writeHead(status, { ...cors, ...headers, 'content-type': 'application/json' })
        .end(JSON.stringify({ error }));
    // A page elsewhere can send a "simple" POST without a preflight, and DNS rebinding can aim one
    // here: only JSON, to a loopback Host, of bounded size.
    if (!LOOPBACK_HOST.test(String(req.headers.host ?? '')))
      return refuse(403, 'the codec endpoint answers on loopback hosts only');
    const prefix = route![1];
    if (token) {
      const bearer = /^Bearer\s+(\S+)\s*$/i.exec(String(req.headers.authorization ?? ''))?.[1];
      const ok =
        (bearer !== undefined && sameToken(bearer, token)) || (prefix !== undefined && sameToken(prefix, token));
      if (!ok)
        return refuse(
          401,
          'the codec endpoint needs its token: Authorization: Bearer <token>, or <endpoint>/<token>/decode',
          { 'www-authenticate': 'Bearer' },
        );
    }
    if (!/^application\/json\b/i.test(String(req.headers['content-type'] ?? '')))
      return refuse(415, 'send application/json');
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
            payloads.map((p) => ({
              metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, bytes(v)])),
              data: bytes(p.data),
            })),
          );
          const body = {
            payloads: decoded.map((p) => ({
              metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, b64(v)])),
              data: b64(p.data),
            })),
          };
          res.writeHead(200, { ...cors, 'content-type': 'application/json' }).end(JSON.stringify(body));
        } catch (err) {
          res
            .writeHead(400, { ...cors, 'content-type': 'application/json' })
            .end(JSON.stringify({ error: (err as Error).message }));
        }
      })();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    uiEndpoint: opts.token === undefined ? url : `${url}/${opts.token}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
