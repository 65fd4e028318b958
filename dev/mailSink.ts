import type { EventEmitter } from 'node:events';
import type { AddressInfo, Server } from 'node:net';
import path from 'node:path';
import { messageFile } from './mailSinkFile';
import { createLookupServer, isLoopback } from './mailSinkHttp';
import { createSmtpServer } from './mailSinkSmtp';
import { createSinkState } from './mailSinkState';
import type { Fault, Ledger, StoredMessage } from './mailSinkState';

/**
 * A local SMTP sink for the demo and the tests: it accepts every message on loopback, records it,
 * and counts deliveries per Message-ID so that a double effect is visible (it never dedupes).
 *
 * Runtime faults (armed by a test, in-process or through `/_control`, consumed by the next `count` messages whose
 * envelope matches `recipient`, if given), decided at the end of DATA once the message is parsed:
 * - `hold-250`: store the message, then hold the final 250 until `release()`;
 * - `hold-commit`: a slow server: hold WITHOUT storing; `release()` stores and answers 250 only if the client is still
 *   connected, otherwise nothing is stored (`abandoned`). A client that hangs up while held emits `hangup`;
 * - `relay` (`commitAfterMs`, default 5000): a relay or a queue: hold WITHOUT storing, then store `commitAfterMs` after
 *   the end of DATA (or at an earlier `release()`) whether or not the client is still connected, and answer 250 to a
 *   client still there;
 * - `store-then-drop`: store, then close the connection without replying;
 * - `451`: answer 451 (temporary failure), nothing stored;
 * - `554-after-store`: store, then answer 554.
 * The construction-time options (`failData`, `dropAfterData`, `delayDataReplyMs`) still apply to every message no
 * runtime fault matched. Barrier events (`stored`, `holding`, `hangup`, `released`, `abandoned`, `dropped`, `failed`, `reset`) carry the
 * normalized Message-ID (`-` when there is none); tests wait on them, never on a sleep.
 */

// The sink's records and faults are declared with its state; importers keep reading them from here.
export { FAULT_MODES, normalizeMessageId } from './mailSinkState';
export type { Fault, FaultMode, Ledger, StoredMessage, TransactionOutcome, TransactionRecord } from './mailSinkState';

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
  const state = createSinkState(store ? await store.load() : [], store);
  const smtp = createSmtpServer(state, options);
  const api = createLookupServer(state);

  let closing: Promise<void> | undefined;
  const sink: MailSink = {
    smtpPort: 0,
    httpPort: 0,
    lookupUrl: '',
    messages: () => state.messages.map((m) => ({ ...m, to: [...m.to] })),
    deliveries: state.deliveries,
    ledger: state.ledger,
    arm: state.arm,
    disarm: state.disarm,
    release: state.release,
    reset: state.reset,
    events: state.events,
    waitFor: state.waitFor,
    close: () =>
      (closing ??= (async () => {
        state.endAll('close'); // held replies are dropped, not answered: the sink is going away
        api.closeAllConnections();
        await Promise.all([
          new Promise<void>((resolve) => smtp.close(() => resolve())),
          new Promise<void>((resolve) => api.close(() => resolve())),
        ]);
        await store?.flushed();
      })()),
  };

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
