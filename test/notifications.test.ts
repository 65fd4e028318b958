import { strict as assert } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startApprovalsServer, type ApprovalsServer } from '../apps/approvals/serve';
import { createToken } from '../apps/approvals/tokens';
import { turnStatus } from '../client/session';
import { notifyUpdate } from '../workflows/definitions';
import { recordHistory } from './support/histories';
import { eventually, scripted, startTurn, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Notifications against a real server: a local webhook receiver, approvals replicas that notify,
// each park notified once across replicas, failures retried, a claim left by a dead notifier taken
// over when its lease ends, and the link leading to the call.

interface Received {
  key: string;
  body: { text: string; openworker: Record<string, unknown> };
}

async function receiver(failFirst = 0) {
  const got: Received[] = [];
  let attempts = 0;
  const server = http.createServer((req, res) => {
    let raw = '';
    req
      .on('data', (d) => (raw += d))
      .on('end', () => {
        attempts++;
        if (attempts <= failFirst) return void res.writeHead(503).end();
        got.push({ key: String(req.headers['idempotency-key']), body: JSON.parse(raw) as Received['body'] });
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    got,
    attempts: () => attempts,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('notifications when a call parks (webhooks, replicas, leases)', function () {
  this.timeout(120_000);
  const w = useWorld();
  let dir: string;
  let tokensFile: string;
  const apps: ApprovalsServer[] = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'openworker-notify-'));
    tokensFile = join(dir, 'tokens.json');
  });
  afterEach(async () => {
    for (const a of apps.splice(0)) await a.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const email = (id: string) => ({
    toolCalls: [
      { id, name: 'send_email', arguments: { to: 'ann@example.com', subject: 'Plan', body: 'the secret plan' } },
    ],
  });
  const app = async (url: string, opts: { leaseMs?: number } = {}) => {
    const a = await startApprovalsServer(w.c, {
      port: 0,
      tokensFile,
      pollMs: 200,
      notify: [url],
      publicUrl: 'https://approvals.example.com/',
      ...opts,
    });
    apps.push(a);
    return a;
  };

  it('two replicas: one message per park, with a working link and no arguments; the turn records who sent it', async () => {
    const hook = await receiver();
    try {
      await w.worker(scripted([email('c1'), { text: 'done' }]));
      await app(hook.url);
      const b = await app(hook.url);
      const sessionId = uniq('notify');
      const parked = await startTurn(w.c, sessionId, 'send ann the plan');
      await eventually(async () => hook.got.length >= 1, 'the webhook is called');
      // Both replicas keep polling; the turn grants the park to one of them.
      await new Promise((r) => setTimeout(r, 1500));
      assert.equal(hook.got.length, 1, JSON.stringify(hook.got));
      const [m] = hook.got;
      const executionId = parked.ledger[0]!.executionId;
      assert.equal(m!.key, `${executionId}:approval`);
      assert.match(
        m!.body.text,
        new RegExp(`^send_email → ann@example\\.com is waiting for approval in session ${sessionId}`),
      );
      assert.ok(!JSON.stringify(m!.body).includes('secret plan'), 'the arguments stay out of the message');
      assert.equal(m!.body.openworker.event, 'awaiting_approval');
      // The link is the call's page; its API answers for a signed-in operator.
      const link = new URL(String(m!.body.openworker.link));
      assert.equal(link.origin, 'https://approvals.example.com');
      const api = `${b.url}/api/calls/${executionId}?${link.hash.split('?')[1]}`;
      const token = createToken('ops', tokensFile);
      const res = await fetch(api, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200);
      const entry = (await turnStatus(w.c, parked.workflowId)).ledger[0]!;
      const types = entry.events.map((e) => e.type);
      assert.deepEqual(types, ['awaiting_approval', 'notification_claimed', 'notified'], types.join(' '));
      await recordHistory(parked.workflowId, 'turn-notified');
    } finally {
      await hook.close();
    }
  });

  it('a receiver that fails is retried; a claim its notifier never reported (as when it dies after claiming) is taken over when its lease ends', async () => {
    const hook = await receiver(2);
    try {
      await w.worker(scripted([email('c1'), { text: 'done' }]));
      const sessionId = uniq('notify-lease');
      const parked = await startTurn(w.c, sessionId, 'send ann the plan');
      const executionId = parked.ledger[0]!.executionId;
      // A notifier claims the park and never reports (as if it died before sending).
      await w.c.client.workflow
        .getHandle(parked.workflowId)
        .executeUpdate(notifyUpdate, { args: [{ executionId, park: 'approval', by: 'dead-replica', leaseMs: 2000 }] });
      const started = Date.now();
      await app(hook.url);
      await eventually(async () => hook.got.length >= 1, 'the message once the lease ends', 30_000);
      assert.ok(Date.now() - started >= 1000, 'not before the dead claim expired');
      assert.equal(hook.attempts(), 3, 'two failures, then delivered');
      assert.equal(hook.got.length, 1);
      const events = (await turnStatus(w.c, parked.workflowId)).ledger[0]!.events;
      assert.deepEqual(
        events.filter((e) => e.type === 'notification_claimed').map((e) => e.by === 'dead-replica'),
        [true, false],
      );
      assert.equal(events.filter((e) => e.type === 'notified').length, 1);
      // A claim the turn refuses leaves no trace: asking again changes nothing.
      await assert.rejects(
        w.c.client.workflow
          .getHandle(parked.workflowId)
          .executeUpdate(notifyUpdate, { args: [{ executionId, park: 'approval', by: 'late', leaseMs: 1000 }] }),
      );
    } finally {
      await hook.close();
    }
  });
});
