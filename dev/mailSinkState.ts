import { EventEmitter } from 'node:events';
import { z } from 'zod';
import { waitForBarrier } from './barriers';
import type { messageFile } from './mailSinkFile';

/**
 * What the mail sink knows, apart from its two servers: the messages and their counts per Message-ID, the SMTP
 * transactions, the armed faults, the held replies and the barrier history. dev/mailSink.ts describes the faults.
 */

export const FAULT_MODES = ['hold-250', 'hold-commit', 'relay', 'store-then-drop', '451', '554-after-store'] as const;
export type FaultMode = (typeof FAULT_MODES)[number];
export interface Fault {
  mode: FaultMode;
  count?: number;
  recipient?: string;
  /** `relay`: how long after the end of DATA the message commits (default 5000). */
  commitAfterMs?: number;
}
/**
 * `relay`: held while the relay has it (`held`), then `stored` at its commit whether or not the client is still there.
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

const faultSchema = z
  .strictObject({
    mode: z.enum(FAULT_MODES),
    count: z.number().int().positive().optional(),
    recipient: z.string().min(1).optional(),
    commitAfterMs: z.number().int().min(0).max(600_000).optional(),
  })
  .refine((f) => f.commitAfterMs === undefined || f.mode === 'relay', {
    message: 'commitAfterMs only goes with mode relay',
  });

/** How a hold ends: `release()`, `reset()`, or the sink closing. */
export type HoldEnd = 'release' | 'reset' | 'close';
interface Held {
  messageId: string;
  sessionId: string;
  end: (how: HoldEnd) => void;
}

export const iso = () => new Date().toISOString();

/** `<id>` and `id` name the same message. */
export function normalizeMessageId(id: string): string {
  const trimmed = id.trim();
  return trimmed.startsWith('<') && trimmed.endsWith('>') ? trimmed.slice(1, -1).trim() : trimmed;
}

/** The messages in arrival order, with the delivery count and the first copy per normalized Message-ID. */
function messageIndex(messages: StoredMessage[]) {
  const counts = new Map<string, number>();
  const firstById = new Map<string, StoredMessage>();
  const record = (m: StoredMessage) => {
    const key = normalizeMessageId(m.messageId);
    counts.set(key, (counts.get(key) ?? 0) + 1);
    if (!firstById.has(key)) firstById.set(key, m);
  };
  messages.forEach(record);
  return {
    messages,
    counts: counts as ReadonlyMap<string, number>,
    firstById: firstById as ReadonlyMap<string, StoredMessage>,
    add: (m: StoredMessage) => (messages.push(m), record(m)),
    clear: () => {
      messages.length = 0;
      counts.clear();
      firstById.clear();
    },
  };
}

/** Barrier events, with their history so that a test can wait for a moment that has already passed. */
function barrierLog() {
  let history: string[] = [];
  const events = new EventEmitter();
  return {
    events,
    emit: (name: string, messageId: string | null = null) => {
      const id = messageId ?? '-';
      history.push(`${name} ${id}`);
      events.emit('barrier', name, id);
      events.emit(name, id);
    },
    waitFor: (name: string, messageId?: string, timeoutMs = 10_000) => {
      const id = messageId === undefined ? undefined : normalizeMessageId(messageId);
      return waitForBarrier('mail sink', events, history, name, id, timeoutMs);
    },
    forget: () => void (history = []),
  };
}

/** The armed faults, each consumed by the next `count` messages whose envelope matches. */
function faultList() {
  let faults: (Omit<Fault, 'count'> & { count: number })[] = [];
  return {
    armed: () => faults,
    arm: (fault: Fault) => {
      const f = faultSchema.parse(fault);
      faults.push({ ...f, count: f.count ?? 1, ...(f.recipient ? { recipient: f.recipient.toLowerCase() } : {}) });
    },
    disarm: () => void (faults = []),
    /** The first armed fault matching the envelope, consumed (and disarmed once its count is spent). */
    take: (recipients: string[]): Fault | undefined => {
      const rcpts = recipients.map((r) => r.toLowerCase());
      const f = faults.find((x) => x.recipient === undefined || rcpts.includes(x.recipient));
      if (!f) return undefined;
      if (--f.count <= 0) faults = faults.filter((x) => x !== f);
      return f;
    },
  };
}

/** The replies held by `hold-250`, `hold-commit` and `relay`. */
function holdSet() {
  const held = new Set<Held>();
  return {
    /** Parks a reply until released, reset or the sink closes; `releaseAfterMs`: released then at the latest. */
    hold: (messageId: string, sessionId: string, releaseAfterMs?: number) =>
      new Promise<HoldEnd>((resolve) => {
        let timer: NodeJS.Timeout | undefined;
        const h: Held = {
          messageId,
          sessionId,
          end: (how) => (clearTimeout(timer), held.delete(h), resolve(how)),
        };
        held.add(h);
        if (releaseAfterMs !== undefined) timer = setTimeout(() => h.end('release'), releaseAfterMs);
      }),
    endAll: (how: HoldEnd) => [...held].forEach((h) => h.end(how)),
    release: (messageId?: string) => {
      const id = messageId === undefined ? undefined : normalizeMessageId(messageId);
      const hs = [...held].filter((h) => id === undefined || h.messageId === id);
      hs.forEach((h) => h.end('release'));
      return hs.length;
    },
  };
}

export type SinkState = ReturnType<typeof createSinkState>;

/** `messages` were loaded from `store`, if any; every commit and reset rewrites it. */
export function createSinkState(messages: StoredMessage[], store: ReturnType<typeof messageFile> | undefined) {
  const index = messageIndex(messages);
  const barriers = barrierLog();
  const faults = faultList();
  const holds = holdSet();
  const persist = (): Promise<void> => store?.write(messages) ?? Promise.resolve();
  let transactions: TransactionRecord[] = [];
  const { emit } = barriers;

  return {
    messages,
    counts: index.counts,
    firstById: index.firstById,
    events: barriers.events,
    emit,
    waitFor: barriers.waitFor,
    ...faults,
    ...holds,
    deliveries: (messageId: string) => index.counts.get(normalizeMessageId(messageId)) ?? 0,
    ledger: (): Ledger => structuredClone({ messages, transactions }),
    transaction: (
      messageId: string | null,
      outcome: TransactionOutcome,
      extra: Omit<TransactionRecord, 'at' | 'messageId' | 'outcome'> = {},
    ) => {
      const t: TransactionRecord = { at: iso(), messageId, outcome, ...extra };
      transactions.push(t);
      return t;
    },
    commit: async (message: StoredMessage): Promise<void> => {
      index.add(message);
      // Reply 250 only once the message is on disk: an accepted message must survive a restart.
      await persist();
      emit('stored', message.messageId);
    },
    reset: () => {
      // A held client gets an answer rather than hanging until its timeout: hold-250 its 250, hold-commit a 451.
      holds.endAll('reset');
      index.clear();
      transactions = [];
      faults.disarm();
      barriers.forget();
      void persist().catch(() => undefined);
      emit('reset');
    },
  };
}
