import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import http from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import type { SMTPServerDataStream, SMTPServerSession } from 'smtp-server';

/**
 * A local SMTP sink for the demo and the tests: it accepts every message on loopback, records it,
 * and counts deliveries per Message-ID so that a double effect is visible (it never dedupes).
 */

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
  close(): Promise<void>;
}

const MAX_SIZE = 10 * 1024 * 1024;

/** `<id>` and `id` name the same message. */
export function normalizeMessageId(id: string): string {
  const trimmed = id.trim();
  return trimmed.startsWith('<') && trimmed.endsWith('>') ? trimmed.slice(1, -1).trim() : trimmed;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

function smtpError(code: number, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode: code });
}

async function loadMessages(file: string): Promise<StoredMessage[]> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new Error(`mail sink: cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    const data = JSON.parse(text) as { messages?: unknown };
    if (!Array.isArray(data.messages)) throw new Error('no "messages" array');
    return data.messages as StoredMessage[];
  } catch (err) {
    throw new Error(`mail sink: ${file} is not a mail sink file: ${(err as Error).message}`);
  }
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
  const file = options.file ? path.resolve(options.file) : undefined;
  const rejected = new Set((options.rejectRecipients ?? []).map((a) => a.toLowerCase()));

  const messages: StoredMessage[] = file ? await loadMessages(file) : [];
  const counts = new Map<string, number>();
  const firstById = new Map<string, StoredMessage>();
  const record = (m: StoredMessage) => {
    const key = normalizeMessageId(m.messageId);
    counts.set(key, (counts.get(key) ?? 0) + 1);
    if (!firstById.has(key)) firstById.set(key, m);
  };
  messages.forEach(record);

  // Writes are chained so that two messages arriving together cannot interleave their renames.
  let writing: Promise<void> = Promise.resolve();
  const persist = (): Promise<void> => {
    if (!file) return Promise.resolve();
    const snapshot = JSON.stringify({ messages }, null, 2);
    // catch first: one failed write must not stop every later one
    writing = writing.catch(() => undefined).then(async () => {
      const tmp = `${file}.${process.pid}.tmp`;
      await fs.mkdir(path.dirname(file), { recursive: true });
      await fs.writeFile(tmp, snapshot);
      await fs.rename(tmp, file); // atomic on POSIX: readers see the old or the new file, never half
    });
    return writing;
  };

  const store = async (stream: SMTPServerDataStream, session: SMTPServerSession): Promise<void> => {
    const parsed = await simpleParser(stream);
    if (stream.sizeExceeded) throw smtpError(552, 'Message exceeds the size limit');
    const envelope = session.envelope;
    const message: StoredMessage = {
      // A message without a Message-ID still counts, under a key no client can collide with.
      messageId: normalizeMessageId(parsed.messageId ?? `sink-${randomUUID()}@mail-sink`),
      from: envelope.mailFrom ? envelope.mailFrom.address : '',
      to: envelope.rcptTo.map((r) => r.address),
      subject: parsed.subject ?? '',
      text: parsed.text ?? '',
      receivedAt: new Date().toISOString(),
    };
    messages.push(message);
    record(message);
    // Reply 250 only once the message is on disk: an accepted message must survive a restart.
    await persist();
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
    onData: (stream, session, callback) => {
      const fault = options.failData;
      if (fault && !fault.afterStore) {
        stream.on('end', () => callback(smtpError(fault.code, 'Message refused (test fault)')));
        stream.resume();
        return;
      }
      store(stream, session).then(
        async () => {
          if (options.delayDataReplyMs) await new Promise((r) => setTimeout(r, options.delayDataReplyMs).unref());
          if (options.dropAfterData) return dropConnection(session.id);
          if (fault) return callback(smtpError(fault.code, 'Message refused after storing (test fault)'));
          callback(null, 'Message stored');
        },
        (err: Error & { responseCode?: number }) => {
          stream.resume();
          callback(err.responseCode ? err : smtpError(451, 'Could not store the message'));
        },
      );
    },
  });
  smtp.on('error', () => undefined); // a client that misbehaves must not crash the sink

  const dropConnection = (sessionId: string) => {
    for (const connection of smtp.connections) if (connection.id === sessionId) connection.close();
  };

  const api = http.createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET') return send(405, { error: 'only GET is supported' });
    const pathname = new URL(req.url ?? '/', 'http://sink').pathname;
    if (pathname === '/health') return send(200, { ok: true });
    if (pathname === '/messages' || pathname === '/messages/') return send(200, { messages });
    if (!pathname.startsWith('/messages/')) return send(404, { error: 'not found' });
    let id: string;
    try {
      id = normalizeMessageId(decodeURIComponent(pathname.slice('/messages/'.length)));
    } catch {
      return send(400, { error: 'malformed message id' });
    }
    const count = counts.get(id) ?? 0;
    if (!count) return send(404, { delivered: false });
    send(200, { delivered: true, count, message: firstById.get(id) });
  });

  await listen(smtp.server, options.smtpPort ?? 0, host);
  try {
    await listen(api, options.httpPort ?? 0, host);
  } catch (err) {
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
    throw err;
  }
  const smtpPort = (smtp.server.address() as AddressInfo).port;
  const httpPort = (api.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  let closing: Promise<void> | undefined;
  return {
    smtpPort,
    httpPort,
    lookupUrl: `http://${urlHost}:${httpPort}/messages`,
    messages: () => messages.map((m) => ({ ...m, to: [...m.to] })),
    deliveries: (messageId) => counts.get(normalizeMessageId(messageId)) ?? 0,
    close: () =>
      (closing ??= (async () => {
        api.closeAllConnections();
        await Promise.all([
          new Promise<void>((resolve) => smtp.close(() => resolve())),
          new Promise<void>((resolve) => api.close(() => resolve())),
        ]);
        await writing.catch(() => undefined);
      })()),
  };
}
