import { messageIdFor } from '../../activities/tools/sendEmail';
import { normalizeMessageId } from '../../dev/mailSink';
import { fingerprintOf } from '../../dev/paymentsApi';
import type { MailSinkProcess } from '../support/mailSinkProcess';
import type { PaymentsProcess } from '../support/paymentsProcess';
import type { Policy } from './cells';

/**
 * The two real external systems a matrix cell talks to, each in its own process, seen through one
 * interface: how the worker reaches it, how a fault is armed for one call, and what it recorded.
 */

/** Peer-side faults, named by what happens rather than by each fake's own mode names. */
export type PeerFault = 'commit-then-drop' | 'commit-then-hang' | 'slow' | 'commit-then-5xx' | 'slow-commit';

export interface PeerObservation {
  /** Effects applied for the call's key (payments charged, emails stored). */
  effects: unknown[];
  /** Every request that reached the peer with the call's key, with what it carried. */
  requests: { payload: string | null; outcome: string; hungUpAt?: string }[];
  /** The same, with the times the peer's ledger gives them (host wall clock), for checker/porcupine. */
  timeline: PeerEvent[];
}

export interface PeerEvent {
  kind: 'request' | 'effect';
  at: string;
  /** When it ended, if later: a held SMTP transaction's release. */
  until?: string;
  outcome?: string;
  /** A request's payload in the peer's terms (null: not recorded); an effect's body as effectOf gives it. */
  payload?: string | null;
  body?: unknown;
}

export interface Peer {
  kind: 'http' | 'smtp';
  tool: 'create_payment' | 'send_email';
  policies: readonly Policy[];
  /** Tool arguments for one cell; `tag` makes them unique so faults can be armed per cell. */
  args(tag: string): Record<string, unknown>;
  /** What one request for `args` carries, in the peer's own terms; null if the peer does not record it. */
  requestPayload(args: Record<string, unknown>): string | null;
  /** How one effect of `args` looks in the peer's ledger. */
  effectOf(args: Record<string, unknown>): unknown;
  env(policy: Policy, extra: { timeout?: string; keyRetention?: string }): Record<string, string>;
  /** The key the peer records calls under. */
  keyOf(executionId: string): string;
  arm(fault: PeerFault, executionId: string, args: Record<string, unknown>): Promise<void>;
  /** Resolves when the peer reports `event` for the call ("committed", "hanging", "conflict" …). */
  barrier(
    event: 'committed' | 'hanging' | 'dropped' | 'slow' | 'conflict' | 'stored' | 'abandoned',
    executionId: string,
    timeoutMs?: number,
  ): Promise<void>;
  release(executionId: string): Promise<void>;
  observe(executionId: string): Promise<PeerObservation>;
}

const HTTP_MODES: Partial<Record<PeerFault, string>> = {
  'commit-then-drop': 'commit-then-drop',
  'commit-then-hang': 'commit-then-hang',
  slow: 'slow',
  'commit-then-5xx': '5xx-after-commit',
};
const SMTP_MODES: Record<PeerFault, string> = {
  'commit-then-drop': 'store-then-drop',
  'commit-then-hang': 'hold-250',
  slow: 'hold-250',
  'commit-then-5xx': '554-after-store',
  // Held before it commits; commits at the release only if the client is still connected.
  'slow-commit': 'hold-commit',
};

export function httpPeer(api: PaymentsProcess): Peer {
  return {
    kind: 'http',
    tool: 'create_payment',
    policies: ['manual', 'idempotent', 'reconcile'],
    args: (tag) => ({ customer: `cust-${tag}`, amount: 4200 }),
    requestPayload: (args) => fingerprintOf(args),
    effectOf: (args) => args,
    env: (policy, extra) => ({
      OPENWORKER_PAYMENTS_URL: api.url,
      OPENWORKER_PAYMENTS_RECOVERY: policy,
      // Short calls keep the reconcile fence (dispatch + start-to-close) short.
      OPENWORKER_PAYMENTS_TIMEOUT: extra.timeout ?? '10s',
      ...(extra.keyRetention ? { OPENWORKER_PAYMENTS_KEY_RETENTION: extra.keyRetention } : {}),
    }),
    keyOf: (id) => id,
    arm: async (fault, key) => {
      // A slow request is held until released; the cell decides when (after the timeout fired).
      if (!HTTP_MODES[fault]) throw new Error(`the payments API has no '${fault}' fault`);
      await api.arm({ mode: HTTP_MODES[fault] as never, key, ...(fault === 'slow' ? { delayMs: 600_000 } : {}) });
    },
    barrier: async (event, key, timeoutMs = 60_000) => {
      await api.waitFor(event === 'stored' ? 'committed' : event, key, timeoutMs);
    },
    release: async (key) => void (await api.release(key)),
    observe: async (key) => {
      const ledger = await api.ledger();
      const effects = ledger.effects.filter((e) => e.key === key);
      const requests = ledger.requests.filter((r) => r.key === key);
      return {
        effects: effects.map((e) => e.body),
        requests: requests.map((r) => ({ payload: r.fingerprint, outcome: r.outcome })),
        timeline: [
          ...requests.map((r): PeerEvent => ({
            kind: 'request',
            at: r.at,
            outcome: r.outcome,
            payload: r.fingerprint,
          })),
          ...effects.map((e): PeerEvent => ({ kind: 'effect', at: e.appliedAt, body: e.body })),
        ],
      };
    },
  };
}

export function smtpPeer(sink: MailSinkProcess): Peer {
  const msgId = (executionId: string) => normalizeMessageId(messageIdFor(executionId));
  return {
    kind: 'smtp',
    tool: 'send_email',
    policies: ['manual', 'reconcile'],
    args: (tag) => ({
      to: `${tag.toLowerCase().replace(/[^a-z0-9-]/g, '-')}@example.com`,
      subject: `Invoice ${tag}`,
      body: 'Attached.',
    }),
    requestPayload: () => null,
    effectOf: (args) => ({ to: [args.to], subject: args.subject, text: args.body }),
    env: (policy, extra) => ({
      OPENWORKER_SMTP_HOST: '127.0.0.1',
      OPENWORKER_SMTP_PORT: String(sink.smtpPort),
      OPENWORKER_SMTP_TIMEOUT: extra.timeout ?? '10s',
      ...(policy === 'reconcile' ? { OPENWORKER_SMTP_LOOKUP_URL: sink.lookupUrl } : {}),
    }),
    keyOf: msgId,
    arm: async (fault, executionId, args) => {
      await sink.arm({ mode: SMTP_MODES[fault] as never, recipient: String(args.to) });
    },
    barrier: async (event, executionId, timeoutMs = 60_000) => {
      const name = event === 'committed' ? 'stored' : event === 'hanging' || event === 'slow' ? 'holding' : event;
      await sink.waitFor(name, msgId(executionId), timeoutMs);
    },
    release: async (executionId) => void (await sink.release(msgId(executionId))),
    observe: async (executionId) => {
      const ledger = await sink.ledger();
      const id = msgId(executionId);
      const stored = ledger.messages.filter((m) => m.messageId === id);
      const transactions = ledger.transactions.filter((t) => t.messageId === id);
      const effectOf = (m: (typeof stored)[number]) => ({ to: m.to, subject: m.subject, text: m.text.trim() });
      // A message is read before it commits; a held one commits at its release (the latest, to be safe).
      const committed = transactions.filter((t) => t.outcome === 'stored' && t.releasedAt).at(-1)?.releasedAt;
      return {
        effects: stored.map(effectOf),
        requests: transactions.map((t) => ({
          payload: null,
          outcome: t.outcome,
          ...(t.hungUpAt ? { hungUpAt: t.hungUpAt } : {}),
        })),
        timeline: [
          ...transactions.map((t): PeerEvent => ({
            kind: 'request',
            at: t.at,
            outcome: t.outcome,
            ...(t.releasedAt ? { until: t.releasedAt } : {}),
          })),
          ...stored.map((m): PeerEvent => ({
            kind: 'effect',
            at: m.receivedAt,
            ...(committed ? { until: committed } : {}),
            body: effectOf(m),
          })),
        ],
      };
    },
  };
}
