import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small payments API with Idempotency-Key semantics, for the `idempotent` tool: the first request
 * with a key is applied and its response stored; a repeat gets the stored response and applies nothing.
 * It counts effects (applied) and requests separately, so a test sees both.
 */
export interface EffectsServer {
  url: string;
  requests: { key: string | undefined; body: unknown; at: number }[];
  effects(key: string): number;
  totalEffects(): number;
  close(): Promise<void>;
}

export async function startEffectsServer(): Promise<EffectsServer> {
  const applied = new Map<string, { count: number; response: unknown }>();
  const requests: EffectsServer['requests'] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8').on('data', (d: string) => (raw += d));
    req.on('end', () => {
      const send = (status: number, body: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      };
      const key = req.headers['idempotency-key'] as string | undefined;
      if (req.method === 'POST' && req.url === '/charges') {
        const body = raw ? JSON.parse(raw) : {};
        requests.push({ key, body, at: Date.now() });
        if (!key) return send(400, { error: 'Idempotency-Key header is required' });
        const prior = applied.get(key);
        if (prior) return send(200, prior.response);
        const response = { chargeId: `ch_${applied.size + 1}`, amount: body.amount, key };
        applied.set(key, { count: 1, response });
        return send(201, response);
      }
      const m = /^\/charges\/(.+)$/.exec(req.url ?? '');
      if (req.method === 'GET' && m) {
        const prior = applied.get(decodeURIComponent(m[1]!));
        return prior ? send(200, prior.response) : send(404, { applied: false });
      }
      send(404, { error: 'no such route' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    effects: (key) => applied.get(key)?.count ?? 0,
    totalEffects: () => [...applied.values()].reduce((n, a) => n + a.count, 0),
    close: () => new Promise((r) => server.close(() => r())),
  };
}
