import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import { waitForBarrier } from './barriers';

/**
 * A payments API fake that follows the IETF Idempotency-Key header draft (draft-ietf-httpapi-idempotency-key-header),
 * used as a real external system in crash tests. The first request with a key locks it (`in_flight`), applies the
 * effect, stores the response and answers it; a repeat with the same payload replays the stored response
 * (`Idempotent-Replayed: true`), a repeat with another payload is 422, a repeat while locked is 409. Keys are forgotten
 * after `retentionMs`, as real APIs do, so a very late retry is applied again (the hazard the product must guard against).
 *
 * Faults (armed by a test, consumed by the next `count` matching requests):
 * - `fail-before-commit`: 503, nothing stored or applied (checked before the key is looked up, like a failing front end);
 * - `slow`: the key is locked, then the request waits `delayMs` (or until released) before applying;
 * - `commit-then-drop` / `commit-then-hang` / `5xx-after-commit`: apply and store, then destroy the socket / hold the
 *   response until released / answer (and store, so replays return) a 500.
 * `slow` and the commit faults are consumed only by requests that would apply an effect, never by a replay.
 */

export const FAULT_MODES = [
  'commit-then-drop',
  'commit-then-hang',
  'fail-before-commit',
  '5xx-after-commit',
  'slow',
] as const;
export type FaultMode = (typeof FAULT_MODES)[number];
export interface Fault {
  mode: FaultMode;
  count?: number;
  key?: string;
  delayMs?: number;
}
export type Outcome =
  | 'applied'
  | 'replayed'
  | 'conflict_409'
  | 'mismatch_422'
  | 'missing_key_400'
  | 'bad_key_400'
  | 'bad_body_400'
  | 'failed_503';
export interface PaymentBody {
  customer: string;
  amount: number;
  currency?: string;
}
export interface Effect {
  paymentId: string;
  key: string;
  body: PaymentBody;
  appliedAt: string;
}
export interface RequestRecord {
  at: string;
  key: string | null;
  fingerprint: string | null;
  outcome: Outcome;
  fault?: FaultMode;
}
export interface Ledger {
  effects: Effect[];
  requests: RequestRecord[];
}
export interface PaymentsApiOptions {
  host?: string;
  port?: number;
  retentionMs?: number;
  now?: () => number;
}

export interface PaymentsApi {
  url: string;
  port: number;
  /** Effects applied for `key`, or in total. More than one for a key means a double effect. */
  effects(key?: string): number;
  ledger(): Ledger;
  arm(fault: Fault): void;
  disarm(): void;
  /** Lets held requests (hung responses, slow waits) go on, for `key` or all; returns how many. */
  release(key?: string): number;
  advanceClock(ms: number): void;
  reset(): void;
  /** Emits `barrier` (name, key) for every notable moment, and each name alone with the key. */
  events: EventEmitter;
  /** Resolves once `name [key]` has happened (already, or within `timeoutMs`). */
  waitFor(name: string, key?: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const MAX_BODY = 64 * 1024;
const MAX_KEY = 256; // the same limit as @node-idempotency/core

const paymentSchema = z.strictObject({
  customer: z.string().min(1),
  amount: z.number().int().positive(),
  currency: z
    .string()
    .regex(/^[A-Z]{3}$/)
    .optional(),
});
const faultSchema = z.strictObject({
  mode: z.enum(FAULT_MODES),
  count: z.number().int().positive().optional(),
  key: z.string().min(1).optional(),
  delayMs: z.number().int().nonnegative().optional(),
});

interface Entry {
  fingerprint: string;
  state: 'in_flight' | 'complete';
  createdAt: number;
  status?: number;
  body?: unknown;
}
interface Held {
  key: string;
  go: () => void;
  cancel: () => void;
}

function isLoopback(host: string | undefined): boolean {
  return !!host && (host === 'localhost' || host === '::1' || /^(::ffff:)?127(\.\d{1,3}){3}$/.test(host));
}

/** Sorted keys at every level, so the fingerprint does not depend on the client's key order. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
/** One line, also for zod's multi-issue errors. */
function errorText(err: unknown): string {
  if (err instanceof z.ZodError) return err.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
  return (err as Error).message;
}

export function fingerprintOf(body: unknown): string {
  return createHash('sha256').update(canonical(body)).digest('hex');
}

/** The draft's header is an sf-string ("..."); a bare token is accepted too, as most real APIs do. */
export function parseKey(header: string | string[] | undefined): string | undefined | Error {
  if (header === undefined || header === '') return undefined;
  if (Array.isArray(header)) return new Error('Idempotency-Key must be sent once');
  let key = header.trim();
  if (key.startsWith('"')) {
    if (!/^"(?:[^"\\]|\\["\\])*"$/.test(key))
      return new Error('Idempotency-Key is not a valid structured-field string');
    key = key.slice(1, -1).replace(/\\(["\\])/g, '$1');
  }
  // Spaces would break the one-line barrier reports, so keys are visible ASCII only.
  if (!/^[\x21-\x7e]+$/.test(key) || key.length > MAX_KEY)
    return new Error(`Idempotency-Key must be 1-${MAX_KEY} visible ASCII characters`);
  return key;
}

export async function startPaymentsApi(options: PaymentsApiOptions = {}): Promise<PaymentsApi> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopback(host)) throw new Error(`payments API: host must be a loopback address, got ${JSON.stringify(host)}`);
  const retentionMs = options.retentionMs ?? DAY_MS;
  let offset = 0;
  const now = options.now ?? (() => Date.now() + offset);
  // Ledger times are the host's clock, never the moved one: they are compared with other processes' (checker/porcupine).
  const iso = () => new Date().toISOString();

  const store = new Map<string, Entry>();
  let effects: Effect[] = [];
  let requests: RequestRecord[] = [];
  let faults: (Required<Omit<Fault, 'key'>> & { key?: string })[] = [];
  const held = new Set<Held>();
  let history: string[] = [];
  let epoch = 0; // bumped by reset/close: a request waiting across it must not touch the new state
  let paymentSeq = 0;
  const events = new EventEmitter();
  let closing: Promise<void> | undefined;

  const emit = (name: string, key = '-') => {
    history.push(`${name} ${key}`);
    events.emit('barrier', name, key);
    events.emit(name, key);
  };
  const take = (modes: FaultMode[], key: string) => {
    const f = faults.find((x) => modes.includes(x.mode) && (x.key === undefined || x.key === key));
    if (!f) return undefined;
    if (--f.count <= 0) faults = faults.filter((x) => x !== f);
    return f;
  };
  /** The stored entry, unless retention has passed (a locked key is never forgotten while locked). */
  const lookup = (key: string): Entry | undefined => {
    const e = store.get(key);
    if (!e || e.state === 'in_flight' || now() - e.createdAt <= retentionMs) return e;
    store.delete(key);
    emit('expired', key);
    return undefined;
  };
  /** Parks a request until released (or `delayMs` passes); false when cancelled by reset/close. */
  const hold = (key: string, delayMs?: number) =>
    new Promise<boolean>((resolve) => {
      const finish = (ok: boolean) => (clearTimeout(timer), held.delete(h), resolve(ok));
      const h: Held = { key, go: () => finish(true), cancel: () => finish(false) };
      const timer = delayMs === undefined ? undefined : setTimeout(h.go, delayMs);
      held.add(h);
    });
  const cancelHeld = () => [...held].forEach((h) => h.cancel());

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    if (res.destroyed) return;
    res
      .writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers })
      .end(JSON.stringify(body));
  };

  async function pay(req: http.IncomingMessage, res: http.ServerResponse, raw: string | undefined): Promise<void> {
    const rec = (key: string | null, fingerprint: string | null, outcome: Outcome, fault?: FaultMode) =>
      requests.push({ at: iso(), key, fingerprint, outcome, ...(fault ? { fault } : {}) });
    /** Records the request, reports the barrier and answers: every early exit looks the same. */
    const answer = (
      outcome: Outcome,
      event: string,
      key: string | null,
      fp: string | null,
      status: number,
      body: unknown,
      headers = {},
    ) => {
      rec(key, fp, outcome, outcome === 'failed_503' ? 'fail-before-commit' : undefined);
      emit(event, key ?? '-');
      send(res, status, body, headers);
    };
    const key = parseKey(req.headers['idempotency-key']);
    if (key === undefined)
      return answer('missing_key_400', 'rejected', null, null, 400, { error: 'Idempotency-Key header is required' });
    if (key instanceof Error) return answer('bad_key_400', 'rejected', null, null, 400, { error: key.message });
    let body: PaymentBody;
    try {
      if (raw === undefined) throw new Error(`body larger than ${MAX_BODY} bytes`);
      body = paymentSchema.parse(JSON.parse(raw));
    } catch (err) {
      return answer('bad_body_400', 'rejected', key, null, 400, { error: `malformed payment: ${errorText(err)}` });
    }
    const fp = fingerprintOf(body);
    if (take(['fail-before-commit'], key))
      return answer('failed_503', 'failed', key, fp, 503, {
        error: 'service unavailable (test fault), nothing was applied',
      });
    const prior = lookup(key);
    if (prior?.state === 'in_flight')
      return answer('conflict_409', 'conflict', key, fp, 409, {
        error: 'a request with this Idempotency-Key is still being processed',
      });
    if (prior && prior.fingerprint !== fp)
      return answer('mismatch_422', 'mismatch', key, fp, 422, {
        error: 'this Idempotency-Key was used with a different payload',
      });
    if (prior)
      return answer('replayed', 'replayed', key, fp, prior.status!, prior.body, { 'idempotent-replayed': 'true' });

    const entry: Entry = { fingerprint: fp, state: 'in_flight', createdAt: now() };
    store.set(key, entry); // lock first: everything up to here ran without yielding, so the check-and-set is atomic
    const started = epoch;
    const slow = take(['slow'], key);
    if (slow) {
      emit('slow', key);
      // The server goes on even if the client has gone: a killed worker's request still commits.
      if (!(await hold(key, slow.delayMs)) || started !== epoch) return void res.destroy();
    }
    const fault = take(['commit-then-drop', 'commit-then-hang', '5xx-after-commit'], key)?.mode;
    const paymentId = `pay_${String(++paymentSeq).padStart(6, '0')}`;
    effects.push({ paymentId, key, body, appliedAt: iso() });
    entry.status = fault === '5xx-after-commit' ? 500 : 201;
    entry.body =
      fault === '5xx-after-commit'
        ? { error: 'internal error (test fault)' }
        : { paymentId, customer: body.customer, amount: body.amount, currency: body.currency ?? 'USD', key };
    entry.state = 'complete';
    rec(key, fp, 'applied', fault ?? slow?.mode);
    emit('committed', key);
    if (fault === 'commit-then-drop') {
      res.socket?.destroy();
      return emit('dropped', key);
    }
    if (fault === 'commit-then-hang') {
      emit('hanging', key);
      if (!(await hold(key)) || started !== epoch) return void res.destroy();
      emit('released', key);
    }
    send(res, entry.status, entry.body);
    emit('answered', key);
  }

  function byKey(res: http.ServerResponse, encoded: string): void {
    let e: Entry | undefined;
    try {
      e = lookup(decodeURIComponent(encoded));
    } catch {
      return send(res, 400, { error: 'malformed key in the path' });
    }
    if (!e) return send(res, 404, { applied: false });
    if (e.state === 'in_flight') return send(res, 409, { applied: 'in_flight' });
    send(res, 200, { applied: true, status: e.status, response: e.body });
  }

  const api: PaymentsApi = {
    url: '',
    port: 0,
    effects: (key) => (key === undefined ? effects.length : effects.filter((e) => e.key === key).length),
    ledger: () => structuredClone({ effects, requests }),
    arm: (fault) => {
      const f = faultSchema.parse(fault);
      if (f.mode === 'slow' && f.delayMs === undefined) throw new Error('payments API: a slow fault needs delayMs');
      faults.push({ ...f, count: f.count ?? 1, delayMs: f.delayMs ?? 0 });
    },
    disarm: () => void (faults = []),
    release: (key) => {
      const hs = [...held].filter((h) => key === undefined || h.key === key);
      hs.forEach((h) => h.go());
      return hs.length;
    },
    advanceClock: (ms) => {
      if (options.now) throw new Error('payments API: the clock is injected (options.now); advance that clock instead');
      if (!Number.isFinite(ms) || ms < 0)
        throw new Error(`payments API: advanceMs must be a non-negative number, got ${ms}`);
      offset += ms;
    },
    reset: () => {
      epoch++;
      cancelHeld();
      store.clear();
      [effects, requests, faults, history, paymentSeq] = [[], [], [], [], 0];
      emit('reset');
    },
    events,
    waitFor: (name, key, timeoutMs = 10_000) => waitForBarrier('payments API', events, history, name, key, timeoutMs),
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        epoch++;
        cancelHeld(); // held requests are destroyed, not answered: the server is going away
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };

  const control = (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    path: string,
    raw: string | undefined,
  ): void => {
    if (!isLoopback(req.socket.remoteAddress))
      return send(res, 403, { error: 'the control API answers loopback clients only' });
    const route = controlRoutes[`${req.method} ${path}`];
    if (!route) return send(res, 404, { error: `no control route ${req.method} ${path}` });
    try {
      send(res, 200, route((raw ? JSON.parse(raw) : {}) as Record<string, unknown>));
    } catch (err) {
      send(res, 400, { error: errorText(err).replace(/^payments API: /, '') });
    }
  };
  const controlRoutes: Record<string, (input: Record<string, unknown>) => unknown> = {
    'POST /_control/faults': (input) => (api.arm(input as unknown as Fault), { armed: faults }),
    'DELETE /_control/faults': () => (api.disarm(), { armed: [] }),
    'POST /_control/release': (input) => ({
      released: api.release(typeof input.key === 'string' ? input.key : undefined),
    }),
    'POST /_control/clock': (input) => (api.advanceClock(Number(input.advanceMs)), { now: now() }),
    'GET /_control/ledger': () => api.ledger(),
    'POST /_control/reset': () => (api.reset(), { reset: true }),
  };

  const server = http.createServer({ requestTimeout: 10_000, headersTimeout: 5_000 }, (req, res) => {
    let raw: string | undefined = '';
    req.setEncoding('utf8').on('data', (d: string) => {
      if (raw !== undefined && raw.length + d.length <= MAX_BODY) raw += d;
      else raw = undefined; // too large: keep draining, answer 400
    });
    req.on('end', () => {
      const path = new URL(req.url ?? '/', 'http://payments').pathname;
      if (path.startsWith('/_control/')) return control(req, res, path, raw);
      if (req.method === 'POST' && path === '/payments')
        return void pay(req, res, raw).catch((err: Error) => send(res, 500, { error: err.message }));
      const m = /^\/payments\/by-key\/([^/]+)$/.exec(path);
      if (req.method === 'GET' && m) return byKey(res, m[1]!);
      send(res, 404, { error: `no route ${req.method} ${path}` });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  api.port = (server.address() as AddressInfo).port;
  api.url = `http://${host.includes(':') ? `[${host}]` : host}:${api.port}`;
  return api;
}
