import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import http from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import type { SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import { z } from 'zod';
import { waitForBarrier } from './barriers';
import { messageFile } from './mailSinkFile';

/**
 * A local SMTP sink for the demo and the tests: it accepts every message on loopback, records it,
 * and counts deliveries per Message-ID so that a double effect is visible (it never dedupes).
 *
 * Runtime faults (armed by a test, in-process or through `/_control`, consumed by the next `count` messages whose
 * envelope matches `recipient`, if given), decided at the end of DATA once the message is parsed:
 * - `hold-250`: store the message, then hold the final 250 until `release()`;
 * - `hold-commit`: a slow server: hold WITHOUT storing; `release()` stores and answers 250 only if the client is still
 *   connected, otherwise nothing is stored (`abandoned`). A client that hangs up while held emits `hangup`;
 * - `store-then-drop`: store, then close the connection without replying;
 * - `451`: answer 451 (temporary failure), nothing stored;
 * - `554-after-store`: store, then answer 554.
 * The construction-time options (`failData`, `dropAfterData`, `delayDataReplyMs`) still apply to every message no
 * runtime fault matched. Barrier events (`stored`, `holding`, `hangup`, `released`, `abandoned`, `dropped`, `failed`, `reset`) carry the
 * normalized Message-ID (`-` when there is none); tests wait on them, never on a sleep.
 */

export const FAULT_MODES = ['hold-250', 'hold-commit', 'store-then-drop', '451', '554-after-store'] as const;
export type FaultMode = (typeof FAULT_MODES)[number];
export interface Fault {
  mode: FaultMode;
  count?: number;
  recipient?: string;
}
/**
 * `failed_451`: answered with an error, nothing stored; `stored_554`: stored, then answered with an error (`code` is
 * the reply actually sent: 451/554 for the runtime faults, `failData.code` for the option); `rejected`: not a test
 * fault (size limit, unreadable message, storage failure); `abandoned`: `hold-commit` found its client gone at the
 * release, nothing stored (a `hold-commit` transaction reads `held` while held, `stored` once released to a client).
 */
export type TransactionOutcome = 'stored' | 'held' | 'abandoned' | 'dropped' | 'failed_451' | 'stored_554' | 'rejected';
export interface TransactionRecord {
  at: string;
  /** Normalized Message-ID; null when the message could not be read. */
  messageId: string | null;
  outcome: TransactionOutcome;
  /** The SMTP reply code, when it was not 250. */
  code?: number;
  fault?: FaultMode;
  /** For `held`: when the 250 went out (absent while still held, or when the sink closed first); `hold-commit`: the release. */
  releasedAt?: string;
  /** `hold-commit`: when the client hung up while its transaction was held. */
  hungUpAt?: string;
}
export interface Ledger {
  messages: StoredMessage[];
  transactions: TransactionRecord[];
}

export interface StoredMessage {
  messageId: string;
  /** Envelope sender (MAIL FROM), what the SMTP server actually saw. */
  from: string;
  /** Envelope recipients (RCPT TO), cc included. */
  to: string[];
  subject: string;
  text: string;
  receivedAt: string;
}

export interface MailSinkOptions {
  host?: string;
  /** 0 (default) picks a free port. */
  smtpPort?: number;
  /** 0 (default) picks a free port. */
  httpPort?: number;
  /** JSON file that keeps the messages across restarts; rewritten atomically on each message. */
  file?: string;
  /** Test fault: answer the end of DATA with `code`, after storing the message or without storing it. */
  failData?: { code: number; afterStore: boolean };
  /** Test fault: answer RCPT TO for these addresses with 550. */
  rejectRecipients?: string[];
  /** Test fault: store the message, then drop the connection without answering the end of DATA. */
  dropAfterData?: boolean;
  /** Test fault: store the message, then wait this long before answering the end of DATA. */
  delayDataReplyMs?: number;
}

export interface MailSink {
  smtpPort: number;
  httpPort: number;
  /** `GET ${lookupUrl}/${encodeURIComponent(messageId)}` tells whether a message was delivered. */
  lookupUrl: string;
  /** Every delivery in arrival order, duplicates included. */
  messages(): StoredMessage[];
  deliveries(messageId: string): number;
  /** Every message and every SMTP transaction (end of DATA), in order. */
  ledger(): Ledger;
  arm(fault: Fault): void;
  disarm(): void;
  /** Sends the held 250s, for `messageId` or all; returns how many. */
  release(messageId?: string): number;
  /** Forgets messages (also in `file`), transactions, faults and barrier history; releases held replies. */
  reset(): void;
  /** Emits `barrier` (name, messageId) for every notable moment, and each name alone with the Message-ID. */
  events: EventEmitter;
  /** Resolves once `name [messageId]` has happened (already, or within `timeoutMs`). */
  waitFor(name: string, messageId?: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

const MAX_SIZE = 10 * 1024 * 1024;
const MAX_CONTROL_BODY = 64 * 1024;

const faultSchema = z.strictObject({
  mode: z.enum(FAULT_MODES),
  count: z.number().int().positive().optional(),
  recipient: z.string().min(1).optional(),
});

/** How a hold ends: `release()`, `reset()`, or the sink closing. */
type HoldEnd = 'release' | 'reset' | 'close';
interface Held {
  messageId: string;
  sessionId: string;
  end: (how: HoldEnd) => void;
}

/** One line, also for zod's multi-issue errors. */
function errorText(err: unknown): string {
  if (err instanceof z.ZodError) return err.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
  return (err as Error).message;
}

/** `<id>` and `id` name the same message. */
export function normalizeMessageId(id: string): string {
  const trimmed = id.trim();
  return trimmed.startsWith('<') && trimmed.endsWith('>') ? trimmed.slice(1, -1).trim() : trimmed;
}

function isLoopback(host: string | undefined): boolean {
  return !!host && (host === 'localhost' || host === '::1' || /^(::ffff:)?127(\.\d{1,3}){3}$/.test(host));
}

function smtpError(code: number, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode: code });
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.once('listening', () => resolve());
    server.listen(port, host);
  });
}

export async function startMailSink(options: MailSinkOptions = {}): Promise<MailSink> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopback(host)) throw new Error(`mail sink: host must be a loopback address, got ${JSON.stringify(host)}`);
  const store = options.file ? messageFile(path.resolve(options.file)) : undefined;
  const rejected = new Set((options.rejectRecipients ?? []).map((a) => a.toLowerCase()));

  const messages: StoredMessage[] = store ? await store.load() : [];
  const counts = new Map<string, number>();
  const firstById = new Map<string, StoredMessage>();
  const record = (m: StoredMessage) => {
    const key = normalizeMessageId(m.messageId);
    counts.set(key, (counts.get(key) ?? 0) + 1);
    if (!firstById.has(key)) firstById.set(key, m);
  };
  messages.forEach(record);

  const persist = (): Promise<void> => store?.write(messages) ?? Promise.resolve();

  let transactions: TransactionRecord[] = [];
  let faults: (Omit<Fault, 'count'> & { count: number })[] = [];
  const held = new Set<Held>();
  let history: string[] = [];
  const events = new EventEmitter();
  const iso = () => new Date().toISOString();

  const emit = (name: string, messageId: string | null = null) => {
    const id = messageId ?? '-';
    history.push(`${name} ${id}`);
    events.emit('barrier', name, id);
    events.emit(name, id);
  };
  const transaction = (
    messageId: string | null,
    outcome: TransactionOutcome,
    extra: Omit<TransactionRecord, 'at' | 'messageId' | 'outcome'> = {},
  ) => {
    const t: TransactionRecord = { at: iso(), messageId, outcome, ...extra };
    transactions.push(t);
    return t;
  };
  /** The first armed fault matching the envelope, consumed (and disarmed once its count is spent). */
  const take = (recipients: string[]): Fault | undefined => {
    const rcpts = recipients.map((r) => r.toLowerCase());
    const f = faults.find((x) => x.recipient === undefined || rcpts.includes(x.recipient));
    if (!f) return undefined;
    if (--f.count <= 0) faults = faults.filter((x) => x !== f);
    return f;
  };
  /** Parks a reply until released, reset or the sink closes. */
  const hold = (messageId: string, sessionId: string) =>
    new Promise<HoldEnd>((resolve) => {
      const h: Held = { messageId, sessionId, end: (how) => (held.delete(h), resolve(how)) };
      held.add(h);
    });
  /** `hold-commit` transactions being held, by SMTP session, to notice a client that hangs up. */
  const heldCommits = new Map<string, TransactionRecord>();
  const connected = (sessionId: string) => [...smtp.connections].some((c) => c.id === sessionId);

  const parse = async (stream: SMTPServerDataStream, session: SMTPServerSession): Promise<StoredMessage> => {
    const parsed = await simpleParser(stream);
    if (stream.sizeExceeded) throw smtpError(552, 'Message exceeds the size limit');
    const envelope = session.envelope;
    return {
      // A message without a Message-ID still counts, under a key no client can collide with.
      messageId: normalizeMessageId(parsed.messageId ?? `sink-${randomUUID()}@mail-sink`),
      from: envelope.mailFrom ? envelope.mailFrom.address : '',
      to: envelope.rcptTo.map((r) => r.address),
      subject: parsed.subject ?? '',
      text: parsed.text ?? '',
      receivedAt: iso(),
    };
  };
  const commit = async (message: StoredMessage): Promise<void> => {
    messages.push(message);
    record(message);
    // Reply 250 only once the message is on disk: an accepted message must survive a restart.
    await persist();
    emit('stored', message.messageId);
  };

  type Reply = (err: Error | null, message?: string) => void;
  const onData = async (stream: SMTPServerDataStream, session: SMTPServerSession, callback: Reply): Promise<void> => {
    let message: StoredMessage;
    try {
      message = await parse(stream, session);
    } catch (err) {
      stream.resume();
      const e = (err as { responseCode?: number }).responseCode
        ? (err as Error & { responseCode: number })
        : smtpError(451, 'Could not read the message');
      transaction(null, 'rejected', { code: e.responseCode });
      emit('failed');
      return callback(e);
    }
    const id = message.messageId;
    const fault = take(message.to)?.mode;
    const legacy = options.failData;
    const refuse = (code: number, text: string, outcome: 'failed_451' | 'stored_554') => {
      transaction(id, outcome, { code, ...(fault ? { fault } : {}) });
      emit('failed', id);
      callback(smtpError(code, text));
    };
    if (fault === '451') return refuse(451, 'Temporary failure (test fault), nothing stored', 'failed_451');
    if (!fault && legacy && !legacy.afterStore)
      return refuse(legacy.code, 'Message refused (test fault)', 'failed_451');
    if (fault === 'hold-commit') return holdCommit(message, session.id, callback);
    try {
      await commit(message);
    } catch {
      transaction(id, 'rejected', { code: 451 });
      emit('failed', id);
      return callback(smtpError(451, 'Could not store the message'));
    }
    switch (fault) {
      case 'store-then-drop':
        transaction(id, 'dropped', { fault });
        dropConnection(session.id);
        return emit('dropped', id);
      case '554-after-store':
        return refuse(554, 'Message refused after storing (test fault)', 'stored_554');
      case 'hold-250': {
        const t = transaction(id, 'held', { fault });
        emit('holding', id);
        if ((await hold(id, session.id)) === 'close') return dropConnection(session.id); // the sink is closing: no answer
        t.releasedAt = iso();
        emit('released', id);
        return callback(null, 'Message stored');
      }
    }
    if (options.delayDataReplyMs) await new Promise((r) => setTimeout(r, options.delayDataReplyMs).unref());
    if (options.dropAfterData) {
      transaction(id, 'dropped');
      dropConnection(session.id);
      return emit('dropped', id);
    }
    if (legacy) return refuse(legacy.code, 'Message refused after storing (test fault)', 'stored_554');
    transaction(id, 'stored');
    callback(null, 'Message stored');
  };

  /** A slow server: nothing is stored until the release, and then only for a client still there to hear the 250. */
  const holdCommit = async (message: StoredMessage, sessionId: string, callback: Reply): Promise<void> => {
    const id = message.messageId;
    const t = transaction(id, 'held', { fault: 'hold-commit' });
    heldCommits.set(sessionId, t);
    emit('holding', id);
    const how = await hold(id, sessionId);
    heldCommits.delete(sessionId);
    if (how === 'close') return dropConnection(sessionId);
    if (how === 'reset') return callback(smtpError(451, 'The sink was reset, nothing stored'));
    t.releasedAt = iso();
    if (!connected(sessionId)) {
      t.outcome = 'abandoned';
      return emit('abandoned', id);
    }
    try {
      await commit(message);
    } catch {
      Object.assign(t, { outcome: 'rejected', code: 451 });
      emit('failed', id);
      return callback(smtpError(451, 'Could not store the message'));
    }
    t.outcome = 'stored';
    emit('released', id);
    callback(null, 'Message stored');
  };

  const smtp: SMTPServer = new SMTPServer({
    name: 'mail-sink.localhost',
    banner: 'openworker mail sink',
    size: MAX_SIZE,
    authOptional: true,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    disableReverseLookup: true,
    logger: false,
    closeTimeout: 1000,
    // Dev sink: any credentials are accepted, so a configured user/pass works against it too.
    onAuth: (auth, _session, callback) => callback(null, { user: auth.username ?? 'anonymous' }),
    onRcptTo: (address, _session, callback) => {
      if (rejected.has(address.address.toLowerCase())) return callback(smtpError(550, 'Mailbox unavailable'));
      callback();
    },
    onClose: (session) => {
      const t = heldCommits.get(session.id);
      if (t && !t.hungUpAt) {
        t.hungUpAt = iso();
        emit('hangup', t.messageId);
      }
    },
    onData: (stream, session, callback) => {
      onData(stream, session, callback).catch((err: Error) => {
        stream.resume();
        callback(smtpError(451, `Could not handle the message: ${err.message}`));
      });
    },
  });
  smtp.on('error', () => undefined); // a client that misbehaves must not crash the sink

  const dropConnection = (sessionId: string) => {
    for (const connection of smtp.connections) if (connection.id === sessionId) connection.close();
  };

  let closing: Promise<void> | undefined;
  const sink: MailSink = {
    smtpPort: 0,
    httpPort: 0,
    lookupUrl: '',
    messages: () => messages.map((m) => ({ ...m, to: [...m.to] })),
    deliveries: (messageId) => counts.get(normalizeMessageId(messageId)) ?? 0,
    ledger: () => structuredClone({ messages, transactions }),
    arm: (fault) => {
      const f = faultSchema.parse(fault);
      faults.push({ ...f, count: f.count ?? 1, ...(f.recipient ? { recipient: f.recipient.toLowerCase() } : {}) });
    },
    disarm: () => void (faults = []),
    release: (messageId) => {
      const id = messageId === undefined ? undefined : normalizeMessageId(messageId);
      const hs = [...held].filter((h) => id === undefined || h.messageId === id);
      hs.forEach((h) => h.end('release'));
      return hs.length;
    },
    reset: () => {
      // A held client gets an answer rather than hanging until its timeout: hold-250 its 250, hold-commit a 451.
      [...held].forEach((h) => h.end('reset'));
      messages.length = 0;
      counts.clear();
      firstById.clear();
      [transactions, faults, history] = [[], [], []];
      void persist().catch(() => undefined);
      emit('reset');
    },
    events,
    waitFor: (name, messageId, timeoutMs = 10_000) => {
      const id = messageId === undefined ? undefined : normalizeMessageId(messageId);
      return waitForBarrier('mail sink', events, history, name, id, timeoutMs);
    },
    close: () =>
      (closing ??= (async () => {
        [...held].forEach((h) => h.end('close')); // held replies are dropped, not answered: the sink is going away
        api.closeAllConnections();
        await Promise.all([
          new Promise<void>((resolve) => smtp.close(() => resolve())),
          new Promise<void>((resolve) => api.close(() => resolve())),
        ]);
        await store?.flushed();
      })()),
  };

  const send = (res: http.ServerResponse, status: number, body: unknown) => {
    if (res.destroyed) return;
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    res.end(JSON.stringify(body));
  };
  const controlRoutes: Record<string, (input: Record<string, unknown>) => unknown> = {
    'POST /_control/faults': (input) => (sink.arm(input as unknown as Fault), { armed: faults }),
    'DELETE /_control/faults': () => (sink.disarm(), { armed: [] }),
    'POST /_control/release': (input) => ({
      released: sink.release(typeof input.messageId === 'string' ? input.messageId : undefined),
    }),
    'POST /_control/reset': () => (sink.reset(), { reset: true }),
    'GET /_control/ledger': () => sink.ledger(),
  };
  const control = (req: http.IncomingMessage, res: http.ServerResponse, pathname: string): void => {
    if (!isLoopback(req.socket.remoteAddress))
      return send(res, 403, { error: 'the control API answers loopback clients only' });
    let raw: string | undefined = '';
    req.setEncoding('utf8').on('data', (d: string) => {
      if (raw !== undefined && raw.length + d.length <= MAX_CONTROL_BODY) raw += d;
      else raw = undefined; // too large: keep draining, answer 400
    });
    req.on('end', () => {
      const route = controlRoutes[`${req.method} ${pathname}`];
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
  };

  const api = http.createServer({ requestTimeout: 10_000, headersTimeout: 5_000 }, (req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://sink').pathname;
    if (pathname.startsWith('/_control/')) return control(req, res, pathname);
    if (req.method !== 'GET') return send(res, 405, { error: 'only GET is supported' });
    if (pathname === '/health') return send(res, 200, { ok: true });
    if (pathname === '/messages' || pathname === '/messages/') return send(res, 200, { messages });
    if (!pathname.startsWith('/messages/')) return send(res, 404, { error: 'not found' });
    let id: string;
    try {
      id = normalizeMessageId(decodeURIComponent(pathname.slice('/messages/'.length)));
    } catch {
      return send(res, 400, { error: 'malformed message id' });
    }
    const count = counts.get(id) ?? 0;
    if (!count) return send(res, 404, { delivered: false });
    send(res, 200, { delivered: true, count, message: firstById.get(id) });
  });

  await listen(smtp.server, options.smtpPort ?? 0, host);
  try {
    await listen(api, options.httpPort ?? 0, host);
  } catch (err) {
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
    throw err;
  }
  sink.smtpPort = (smtp.server.address() as AddressInfo).port;
  sink.httpPort = (api.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  sink.lookupUrl = `http://${urlHost}:${sink.httpPort}/messages`;
  return sink;
}
