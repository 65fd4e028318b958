import http from 'node:http';
import { z } from 'zod';
import type { Fault, SinkState } from './mailSinkState';
import { normalizeMessageId } from './mailSinkState';

/** The mail sink's HTTP side: the delivery lookup (`/messages`) and the control API for tests (`/_control`). */

const MAX_CONTROL_BODY = 64 * 1024;

/** One line, also for zod's multi-issue errors. */
function errorText(err: unknown): string {
  if (err instanceof z.ZodError) return err.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
  return (err as Error).message;
}

export function isLoopback(host: string | undefined): boolean {
  return !!host && (host === 'localhost' || host === '::1' || /^(::ffff:)?127(\.\d{1,3}){3}$/.test(host));
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

type ControlRoutes = Record<string, (input: Record<string, unknown>) => unknown>;

function controlRoutes(state: SinkState): ControlRoutes {
  return {
    'POST /_control/faults': (input) => (state.arm(input as unknown as Fault), { armed: state.armed() }),
    'DELETE /_control/faults': () => (state.disarm(), { armed: [] }),
    'POST /_control/release': (input) => ({
      released: state.release(typeof input.messageId === 'string' ? input.messageId : undefined),
    }),
    'POST /_control/reset': () => (state.reset(), { reset: true }),
    'GET /_control/ledger': () => state.ledger(),
  };
}

function control(routes: ControlRoutes, req: http.IncomingMessage, res: http.ServerResponse, pathname: string): void {
  if (!isLoopback(req.socket.remoteAddress))
    return send(res, 403, { error: 'the control API answers loopback clients only' });
  let raw: string | undefined = '';
  req.setEncoding('utf8').on('data', (d: string) => {
    if (raw !== undefined && raw.length + d.length <= MAX_CONTROL_BODY) raw += d;
    else raw = undefined; // too large: keep draining, answer 400
  });
  req.on('end', () => {
    const route = routes[`${req.method} ${pathname}`];
    if (!route) return send(res, 404, { error: `no control route ${req.method} ${pathname}` });
    try {
      if (raw === undefined) throw new Error(`body larger than ${MAX_CONTROL_BODY} bytes`);
      const input: unknown = raw ? JSON.parse(raw) : {};
      if (!input || typeof input !== 'object' || Array.isArray(input))
        throw new Error('the body must be a JSON object');
      send(res, 200, route(input as Record<string, unknown>));
    } catch (err) {
      send(res, 400, { error: errorText(err) });
    }
  });
}

export function createLookupServer(state: SinkState): http.Server {
  const routes = controlRoutes(state);
  return http.createServer({ requestTimeout: 10_000, headersTimeout: 5_000 }, (req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://sink').pathname;
    if (pathname.startsWith('/_control/')) return control(routes, req, res, pathname);
    if (req.method !== 'GET') return send(res, 405, { error: 'only GET is supported' });
    if (pathname === '/health') return send(res, 200, { ok: true });
    if (pathname === '/messages' || pathname === '/messages/') return send(res, 200, { messages: state.messages });
    if (!pathname.startsWith('/messages/')) return send(res, 404, { error: 'not found' });
    let id: string;
    try {
      id = normalizeMessageId(decodeURIComponent(pathname.slice('/messages/'.length)));
    } catch {
      return send(res, 400, { error: 'malformed message id' });
    }
    const count = state.counts.get(id) ?? 0;
    if (!count) return send(res, 404, { delivered: false });
    send(res, 200, { delivered: true, count, message: state.firstById.get(id) });
  });
}
