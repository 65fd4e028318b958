import { randomUUID } from 'node:crypto';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import type { SMTPServerDataStream, SMTPServerSession } from 'smtp-server';
import type { MailSinkOptions } from './mailSink';
import { iso, normalizeMessageId } from './mailSinkState';
import type { SinkState, StoredMessage, TransactionRecord } from './mailSinkState';

/** The mail sink's SMTP server: it stores each message at the end of DATA, or plays the fault armed for it. */

const MAX_SIZE = 10 * 1024 * 1024;

type Reply = (err: Error | null, message?: string) => void;

/** What the DATA handlers need from the sink and from the SMTP server around them. */
interface Link {
  state: SinkState;
  options: MailSinkOptions;
  /** `hold-commit` and `relay` transactions being held, by SMTP session, to notice a client that hangs up. */
  heldCommits: Map<string, TransactionRecord>;
  connected(sessionId: string): boolean;
  dropConnection(sessionId: string): void;
}

function smtpError(code: number, message: string): Error & { responseCode: number } {
  return Object.assign(new Error(message), { responseCode: code });
}

export function createSmtpServer(state: SinkState, options: MailSinkOptions): SMTPServer {
  const rejected = new Set((options.rejectRecipients ?? []).map((a) => a.toLowerCase()));
  const heldCommits = new Map<string, TransactionRecord>();
  const link: Link = {
    state,
    options,
    heldCommits,
    connected: (sessionId) => [...smtp.connections].some((c) => c.id === sessionId),
    dropConnection: (sessionId) => {
      for (const connection of smtp.connections) if (connection.id === sessionId) connection.close();
    },
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
        state.emit('hangup', t.messageId);
      }
    },
    onData: (stream, session, callback) => {
      onData(link, stream, session, callback).catch((err: Error) => {
        stream.resume();
        callback(smtpError(451, `Could not handle the message: ${err.message}`));
      });
    },
  });
  smtp.on('error', () => undefined); // a client that misbehaves must not crash the sink
  return smtp;
}

async function parse(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<StoredMessage> {
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
}

async function onData(
  link: Link,
  stream: SMTPServerDataStream,
  session: SMTPServerSession,
  callback: Reply,
): Promise<void> {
  const { state, options, dropConnection } = link;
  const { emit, transaction } = state;
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
  const armed = state.take(message.to);
  const fault = armed?.mode;
  const legacy = options.failData;
  const refuse = (code: number, text: string, outcome: 'failed_451' | 'stored_554') => {
    transaction(id, outcome, { code, ...(fault ? { fault } : {}) });
    emit('failed', id);
    callback(smtpError(code, text));
  };
  if (fault === '451') return refuse(451, 'Temporary failure (test fault), nothing stored', 'failed_451');
  if (!fault && legacy && !legacy.afterStore) return refuse(legacy.code, 'Message refused (test fault)', 'failed_451');
  if (fault === 'hold-commit') return holdCommit(link, message, session.id, callback);
  if (fault === 'relay') return relay(link, message, session.id, armed?.commitAfterMs ?? 5000, callback);
  try {
    await state.commit(message);
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
      if ((await state.hold(id, session.id)) === 'close') return dropConnection(session.id); // the sink is closing: no answer
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
}

/** A slow server: nothing is stored until the release, and then only for a client still there to hear the 250. */
async function holdCommit(link: Link, message: StoredMessage, sessionId: string, callback: Reply): Promise<void> {
  const { state, heldCommits } = link;
  const { emit, transaction } = state;
  const id = message.messageId;
  const t = transaction(id, 'held', { fault: 'hold-commit' });
  heldCommits.set(sessionId, t);
  emit('holding', id);
  const how = await state.hold(id, sessionId);
  heldCommits.delete(sessionId);
  if (how === 'close') return link.dropConnection(sessionId);
  if (how === 'reset') return callback(smtpError(451, 'The sink was reset, nothing stored'));
  t.releasedAt = iso();
  if (!link.connected(sessionId)) {
    t.outcome = 'abandoned';
    return emit('abandoned', id);
  }
  await commitHeld(state, t, message, callback);
}

/**
 * A relay or a queue: it has the message and commits it `commitAfterMs` after the end of DATA (or at an earlier
 * release) whether or not the client is still connected; a client still there hears the 250.
 */
async function relay(
  link: Link,
  message: StoredMessage,
  sessionId: string,
  commitAfterMs: number,
  callback: Reply,
): Promise<void> {
  const { state } = link;
  const { emit, transaction } = state;
  const id = message.messageId;
  const t = transaction(id, 'held', { fault: 'relay' });
  link.heldCommits.set(sessionId, t); // a client that hangs up meanwhile is recorded (`hangup`), nothing more
  emit('holding', id);
  const how = await state.hold(id, sessionId, commitAfterMs);
  link.heldCommits.delete(sessionId);
  if (how === 'close') return link.dropConnection(sessionId);
  if (how === 'reset') return callback(smtpError(451, 'The sink was reset, nothing stored'));
  t.releasedAt = iso();
  await commitHeld(state, t, message, callback);
}

/** Stores a held message and answers the client: 250, or 451 when it could not be stored. */
async function commitHeld(
  state: Link['state'],
  t: ReturnType<Link['state']['transaction']>,
  message: StoredMessage,
  callback: Reply,
): Promise<void> {
  const id = message.messageId;
  try {
    await state.commit(message);
  } catch {
    Object.assign(t, { outcome: 'rejected', code: 451 });
    state.emit('failed', id);
    return callback(smtpError(451, 'Could not store the message'));
  }
  t.outcome = 'stored';
  state.emit('released', id);
  callback(null, 'Message stored');
}
