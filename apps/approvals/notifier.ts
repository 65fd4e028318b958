import { notifiedSignal, notifyUpdate } from '../../workflows/definitions';
import type { OpenWorkerClient } from '../../client/connection';
import type { InboxItem } from '../../client/inspect';
import { waitingCalls } from './calls';

// Sends what parked calls owe (workflows/notifications.ts): for each call waiting for approval or in
// recovery_required whose park was not notified, claim it from its turn, POST the message to every
// URL, report it sent. Any number of replicas may run this: the turn grants one claim at a time.

const CLAIM_MS = 3000;

export interface NotifierOptions {
  client: OpenWorkerClient;
  urls: string[];
  /** Where the approvals page is reached by the people notified; links point there. */
  publicUrl: string;
  /** Recorded as who sent (this replica). */
  replica: string;
  pollMs?: number;
  /** How long a claim holds: a notifier that dies after claiming delays the message this long. */
  leaseMs?: number;
  /** Attempts per URL, with a doubling backoff from 500 ms. */
  attempts?: number;
  log?: (line: string) => void;
}

export const callLink = (publicUrl: string, c: Pick<InboxItem, 'executionId' | 'sessionId' | 'turn' | 'toolCallId'>) =>
  `${publicUrl.replace(/\/+$/, '')}/#/calls/${c.executionId}?session=${encodeURIComponent(c.sessionId)}&turn=${c.turn}&call=${encodeURIComponent(c.toolCallId)}`;

/** A Slack incoming-webhook body (`text`) that also carries the facts as JSON; never the arguments. */
export function messageFor(c: InboxItem, link: string): Record<string, unknown> {
  const what = `${c.tool}${c.target ? ` → ${c.target}` : ''}`;
  const text =
    c.state === 'awaiting_approval'
      ? `${what} is waiting for approval in session ${c.sessionId} (turn ${c.turn}, call ${c.toolCallId}): ${link}`
      : c.state === 'awaiting_answer'
        ? `The agent asks in session ${c.sessionId} (turn ${c.turn}, call ${c.toolCallId}): ${c.question?.question ?? ''} ${link}`
        : `${what} needs a recovery decision in session ${c.sessionId} (turn ${c.turn}, call ${c.toolCallId})${c.reason ? `: ${c.reason}` : ''}. ${link}`;
  return {
    text,
    openworker: {
      event: c.state,
      park: c.notification.park,
      executionId: c.executionId,
      sessionId: c.sessionId,
      turn: c.turn,
      toolCallId: c.toolCallId,
      tool: c.tool,
      ...(c.target ? { target: c.target } : {}),
      ...(c.reason ? { reason: c.reason } : {}),
      argsDigest: c.argsDigest,
      since: c.since,
      link,
    },
  };
}

export function startNotifier(o: NotifierOptions): { stop(): Promise<void> } {
  const log = o.log ?? ((line: string) => console.error(line));
  let stopped = false;
  let wake: () => void = () => undefined;
  const deliver = async (url: string, body: unknown, key: string): Promise<boolean> => {
    for (let i = 0; i < (o.attempts ?? 3); i++) {
      if (i) await new Promise((r) => setTimeout(r, 500 * 2 ** (i - 1)));
      try {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': key },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(5000),
        });
        if (res.ok) return true;
        log(`notify: ${new URL(url).host} answered ${res.status} for ${key}`);
      } catch (err) {
        log(`notify: ${new URL(url).host}: ${(err as Error).message} for ${key}`);
      }
    }
    return false;
  };
  const notify = async (c: InboxItem): Promise<void> => {
    const park = c.notification.park!;
    const handle = o.client.client.workflow.getHandle(c.workflowId);
    try {
      // The inbox lists turns from visibility, workers or not: a turn whose worker does not take the
      // claim within 3 s is asked again at the next poll, and holds up no other.
      await o.client.client.withDeadline(Date.now() + CLAIM_MS, () =>
        handle.executeUpdate(notifyUpdate, {
          args: [{ executionId: c.executionId, park, by: o.replica, leaseMs: o.leaseMs ?? 60_000 }],
        }),
      );
    } catch (err) {
      // Refused: another notifier took it first, or the call moved on. Said once per call and park.
      const why = ((err as { cause?: Error }).cause ?? (err as Error)).message.split('\n')[0];
      log(`notify: ${c.executionId}:${park} not claimed: ${why}`);
      return;
    }
    const key = `${c.executionId}:${park}`;
    const body = messageFor(c, callLink(o.publicUrl, c));
    const results = await Promise.all(o.urls.map((u) => deliver(u, body, key)));
    const delivered = results.filter(Boolean).length;
    // Nothing delivered: no report, so the claim expires and the next one tries again (bounded by the turn).
    if (!delivered) return;
    await handle.signal(notifiedSignal, {
      executionId: c.executionId,
      park,
      by: o.replica,
      delivered,
      failed: o.urls.length - delivered,
    });
  };
  const loop = (async () => {
    while (!stopped) {
      try {
        // A turn that does not answer quickly is asked again at the next poll, not waited for.
        const due = (await waitingCalls(o.client, { deadlineMs: 3000 })).filter(
          (c) => c.notification.park && !c.notification.notified && !c.notification.claimedBy,
        );
        await Promise.all(due.map(notify));
      } catch (err) {
        log(`notify: ${(err as Error).message.split('\n')[0]}`);
      }
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, o.pollMs ?? 2000);
      });
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      wake();
      await loop;
    },
  };
}
