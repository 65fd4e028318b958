import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { messageIdFor } from '../activities/tools/sendEmail';
import { startApprovalsServer, type ApprovalsServer } from '../apps/approvals/serve';
import { createToken } from '../apps/approvals/tokens';
import { reject } from '../client/decisions';
import { normalizeMessageId } from '../dev/mailSink';
import { turnStatus } from '../client/session';
import { launchBrowser, pageText, requireChromium, shot } from './support/browser';
import { eventually, scripted, startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// The approvals app against a real server and worker: two replicas that share only a tokens file,
// its JSON API (auth, digest binding, one-line errors) and its page in headless Chromium.

const email = (id: string, to: string) => ({
  id,
  name: 'send_email',
  arguments: { to, subject: 'Quarterly report', body: `Numbers attached. ${'Details follow. '.repeat(20)}` },
});

describe('approvals app (API and page, two replicas)', function () {
  this.timeout(180_000);
  const w = useWorld();
  let dir: string;
  let tokensFile: string;
  let alice: string;
  let bob: string;
  let a: ApprovalsServer;
  let b: ApprovalsServer;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'openworker-approvals-'));
    tokensFile = join(dir, 'tokens.json');
    alice = createToken('alice', tokensFile);
    bob = createToken('bob', tokensFile);
    // Two replicas: the same settings, nothing shared between them but Temporal.
    a = await startApprovalsServer(w.c, { port: 0, tokensFile, pollMs: 300 });
    b = await startApprovalsServer(w.c, { port: 0, tokensFile, pollMs: 300 });
  });
  afterEach(async () => {
    await a?.close();
    await b?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const call = async (base: string, path: string, token?: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> & { error?: string } };
  };

  it('API: signed-in only, inbox oldest first, a stale digest refused in one line, a decision audited under its operator', async () => {
    await w.worker(scripted([{ toolCalls: [email('c1', 'ann@example.com')] }, { text: 'Sent.' }]));
    const sessionId = uniq('appr-api');
    const parked = await startTurn(w.c, sessionId, 'send the report to ann');
    assert.equal(parked.state, 'awaiting_approval');

    assert.equal((await call(a.url, '/api/inbox')).status, 401);
    assert.equal((await call(a.url, '/api/inbox', 'owa_forged')).status, 401);
    const inbox = await call(a.url, '/api/inbox', alice);
    assert.equal(inbox.status, 200);
    const items = inbox.body.calls as { executionId: string; sessionId: string; argsDigest: string }[];
    const item = items.find((i) => i.sessionId === sessionId)!;
    assert.ok(item, JSON.stringify(items));

    const stale = await call(b.url, '/api/decisions', bob, {
      executionId: item.executionId,
      action: 'approve',
      argsDigest: 'sha256:0000',
    });
    assert.equal(stale.status, 409);
    assert.match(stale.body.error!, /^the arguments changed since the page showed them .*: reload and decide again$/);
    const wrongAction = await call(b.url, '/api/decisions', bob, {
      executionId: item.executionId,
      action: 'retry',
      argsDigest: item.argsDigest,
    });
    assert.equal(wrongAction.status, 400);
    assert.match(
      wrongAction.body.error!,
      /'retry' does not apply to a call that is awaiting_approval; it takes approve/,
    );
    const noDigest = await call(b.url, '/api/decisions', bob, { executionId: item.executionId, action: 'approve' });
    assert.equal(noDigest.status, 400);

    // Replica B decides what replica A listed.
    const ok = await call(b.url, '/api/decisions', bob, {
      executionId: item.executionId,
      action: 'approve',
      argsDigest: item.argsDigest,
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.outcome, 'applied');
    const done = await eventually(async () => {
      const s = await turnStatus(w.c, parked.workflowId);
      return s.closed && s;
    }, 'the turn completes');
    assert.equal(done.ledger[0]!.approvedBy, 'bob');
    assert.equal(w.sink.deliveries(messageIdFor(item.executionId)), 1);
    const page = await call(a.url, `/api/calls/${item.executionId}?session=${sessionId}&turn=1&call=c1`, alice);
    assert.equal(page.status, 200);
    assert.deepEqual(page.body.actions, [], 'a decided call offers nothing');
    const forged = await call(a.url, `/api/calls/${item.executionId}?session=${sessionId}&turn=1&call=c2`, alice);
    assert.equal(forged.status, 400);
    const textPost = await fetch(`${a.url}/api/decisions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'text/plain', origin: 'http://evil.example' },
      body: '{}',
    });
    assert.equal(textPost.status, 403, 'a cross-site form post is refused');
  });

  it("a call's page shows its own turn's request, not the previous turn's (#28)", async () => {
    await w.worker(
      scripted([
        { text: 'Hello.' },
        { text: 'Sending it.', toolCalls: [email('t2', 'ann@example.com')] },
        { text: 'Sent.' },
      ]),
    );
    const sessionId = uniq('appr-turn2');
    assert.equal((await startTurn(w.c, sessionId, 'say hello first')).state, 'completed');
    const parked = await startTurn(w.c, sessionId, 'now send the report to ann');
    assert.equal(parked.state, 'awaiting_approval');
    const e = parked.ledger[0]!;
    const page = await call(a.url, `/api/calls/${e.executionId}?session=${sessionId}&turn=2&call=t2`, alice);
    assert.equal(page.status, 200, JSON.stringify(page.body));
    const transcript = page.body.transcript as { role: string; content: unknown }[];
    const users = transcript.filter((m) => m.role === 'user').map((m) => m.content);
    assert.deepEqual(users, ['now send the report to ann'], JSON.stringify(transcript));
    assert.ok(
      transcript.some((m) => m.role === 'assistant' && m.content === 'Sending it.'),
      "the model's words that led to the call",
    );
    // Leave nothing waiting: the later tests read the inbox, which asks every waiting turn.
    await reject(w.c, { sessionId, toolCallId: 't2', by: 'alice' });
    await turnClosed(w.c, parked);
  });

  describe('in the browser', () => {
    let browser: Browser | undefined;
    before(async function () {
      requireChromium(this);
      browser = await launchBrowser();
    });
    after(async () => browser?.close());

    const signIn = async (base: string, token: string): Promise<Page> => {
      const page = await browser!.newPage({ viewport: { width: 1280, height: 900 } });
      await page.goto(base);
      await page.fill('#token', token);
      await page.click('button[type=submit]');
      await pageText(page, /Waiting for a decision/, 'the inbox after sign-in');
      return page;
    };

    it('approve with a grant from the page: the next call of the tool needs no approval; the grant listed and revoked there', async () => {
      const s1 = uniq('appr-page');
      await w.worker(
        scripted([
          { toolCalls: [email('c1', 'ann@example.com')] },
          { toolCalls: [email('c2', 'ann@example.com')] },
          { text: 'Both sent.' },
        ]),
      );
      const first = await startTurn(w.c, s1, 'send the report to ann twice');
      assert.equal(first.state, 'awaiting_approval');
      const page = await signIn(a.url, alice);
      try {
        const listed = await pageText(page, new RegExp(s1), 'the waiting call, live');
        assert.match(listed, /to: ann@example\.com/, 'the arguments');
        assert.match(listed, /execution owx-\w+ · digest sha256:/, 'the execution ID and the digest');
        assert.match(listed, /Numbers attached\. Details follow\..*… \(\d+ chars\)/, 'a long value folded');
        await shot(page, 'approvals-inbox');
        // #28: the row is a link, reached with Tab (the list refreshes meanwhile: the focus stays) and opened with Enter.
        const href = await page.getAttribute(`tr.call:has-text("${s1}") a.open`, 'href');
        assert.match(href ?? '', new RegExp(`^#/calls/owx-\\w+\\?session=${s1}&turn=1&call=c1$`));
        let tabs = 0;
        while ((await page.evaluate('document.activeElement?.getAttribute("href")')) !== href) {
          assert.ok(++tabs <= 12, 'the row link is not reached with Tab');
          await page.keyboard.press('Tab');
        }
        // The live list redraws (a new element for the link): the focus moved to it.
        const before = await page.evaluateHandle('document.activeElement');
        await page.waitForFunction((el) => !(el as unknown as { isConnected: boolean }).isConnected, before, {
          timeout: 10_000,
        });
        assert.equal(
          await page.evaluate('document.activeElement?.getAttribute("href")'),
          href,
          'a refresh kept the focus',
        );
        await page.keyboard.press('Enter');
        await pageText(page, /Approve, and always for this session/, 'the call page');
        assert.match((await page.textContent('#digest')) ?? '', /^sha256:/);
        await page.click('#action-approve_session');
        await pageText(page, /approve_session: applied/, 'the outcome');
        // The grant approves the next call of the tool in this session: the turn completes alone.
        const done = await eventually(async () => {
          const s = await turnStatus(w.c, first.workflowId);
          return s.closed && s;
        }, 'the turn completes with the grant');
        assert.deepEqual(
          done.ledger.map((e) => [e.toolCallId, e.state]),
          [
            ['c1', 'succeeded'],
            ['c2', 'succeeded'],
          ],
        );
        assert.equal(done.ledger[0]!.approvedBy, 'alice');
        assert.ok(done.ledger[1]!.grantId, 'c2 was approved by the standing approval');
        // The grant, listed on the call's page with what it approved, and revoked from there.
        await page.reload();
        const grantId = done.ledger[1]!.grantId!;
        await pageText(
          page,
          new RegExp(`${grantId} send_email \\(any target\\) by alice · approved 1 call`),
          'the grant',
        );
        await page.click(`#revoke-${grantId}`);
        await pageText(page, /revoked by alice/, 'the revoke');
      } finally {
        await page.close();
      }
    });

    it('a stale digest refused on the page, then reject with a reason: nothing is sent, audited under its operator', async () => {
      const s2 = uniq('appr-page-rej');
      await w.worker(scripted([{ toolCalls: [email('r1', 'zed@example.com')] }, { text: 'Not sent.' }]));
      const page = await signIn(a.url, alice);
      try {
        const second = await startTurn(w.c, s2, 'send it to zed');
        assert.equal(second.state, 'awaiting_approval');
        await pageText(page, new RegExp(s2), 'the waiting call');
        await page.click(`tr.call:has-text("${s2}")`);
        // The arguments the page showed are not the call's any more (forged here in the page): refused, and said.
        await page.evaluate(`{
          const real = window.fetch.bind(window);
          window.fetch = (url, init) => {
            if (String(url).endsWith('/api/decisions') && typeof init?.body === 'string')
              init = { ...init, body: JSON.stringify({ ...JSON.parse(init.body), argsDigest: 'sha256:stale' }) };
            return real(url, init);
          };
        }`);
        await page.click('#action-approve');
        await pageText(
          page,
          /the arguments changed since the page showed them .*: reload and decide again/,
          'the refusal',
        );
        assert.equal(
          (await turnStatus(w.c, second.workflowId)).ledger[0]!.state,
          'awaiting_approval',
          'nothing was sent',
        );
        await page.reload();
        await pageText(page, /Reject/, 'the call page again');
        await page.fill('#reason', 'zed left the company');
        await page.click('#action-reject');
        await pageText(page, /reject: applied/, 'the rejection');
        const rejected = await eventually(async () => {
          const s = await turnStatus(w.c, second.workflowId);
          return s.closed && s;
        }, 'the rejected turn completes');
        assert.equal(rejected.ledger[0]!.state, 'rejected');
        assert.equal(rejected.ledger[0]!.rejectedBy, 'alice');
        assert.equal(w.sink.deliveries(messageIdFor(rejected.ledger[0]!.executionId)), 0);
      } finally {
        await page.close();
      }
    });

    it('approve with edits from the page: the edit box checks its JSON, the edited arguments run once, the page shows the edit', async () => {
      const sessionId = uniq('appr-page-edit');
      await w.worker(scripted([{ toolCalls: [email('e1', 'ann@example.com')] }, { text: 'Sent.' }]));
      const page = await signIn(a.url, alice);
      try {
        const t = await startTurn(w.c, sessionId, 'send it to ann');
        await pageText(page, new RegExp(sessionId), 'the waiting call');
        await page.click(`tr.call:has-text("${sessionId}")`);
        const asked = JSON.parse(await page.inputValue('#edit-args')) as Record<string, unknown>;
        await page.fill('#edit-args', '{ "to": ');
        await page.click('#action-approve');
        await pageText(page, /the edited arguments are not valid JSON/, 'the JSON error');
        await page.fill('#edit-args', JSON.stringify({ ...asked, subject: 'Edited on the page' }));
        await page.click('#action-approve');
        await pageText(page, /approve: applied/, 'the approval');
        const done = await turnClosed(w.c, t);
        const e = done.ledger[0]!;
        assert.equal(e.state, 'succeeded');
        assert.equal(e.editedBy, 'alice');
        assert.deepEqual(e.originalArguments, asked);
        const id = normalizeMessageId(messageIdFor(e.executionId));
        const sent = w.sink.messages().filter((m) => normalizeMessageId(m.messageId) === id);
        assert.deepEqual(
          sent.map((m) => m.subject),
          ['Edited on the page'],
        );
        await pageText(page, /edited by alice before approving; the model asked/, 'the edit on the call page');
      } finally {
        await page.close();
      }
    });

    it('a call parked in recovery_required: the page shows the evidence and records the decision', async () => {
      const sessionId = uniq('appr-rec');
      const script = scripted([{ toolCalls: [email('m1', 'bob@example.com')] }, { text: 'Done.' }]);
      const w1 = await w.worker(script, { faults: 'tool.after_execute@send_email' });
      const parked = await startTurn(w.c, sessionId, 'send it to bob');
      const approved = await call(a.url, '/api/decisions', alice, {
        executionId: parked.ledger[0]!.executionId,
        action: 'approve',
        argsDigest: parked.ledger[0]!.argsDigest,
      });
      assert.equal(approved.status, 200);
      const executionId = await w1.faultReached('tool.after_execute');
      await w1.kill('SIGKILL');
      await w.worker(script);
      await eventually(async () => {
        const s = await turnStatus(w.c, parked.workflowId);
        return s.ledger[0]!.state === 'recovery_required';
      }, 'the call parks');
      const page = await signIn(b.url, bob);
      try {
        await page.click(`tr.call:has-text("${sessionId}")`);
        await pageText(page, /It succeeded/, 'the recovery decisions');
        const shown = await pageText(page, /outcome_unknown/, 'the ledger evidence');
        assert.match(shown, /dispatched true/);
        assert.match(
          shown,
          /Why it parked: outcome unknown after dispatch: heartbeat timeout.*The tool was called: retry only if you know the first call had no effect\./,
        );
        assert.equal(await page.getAttribute('#action-retry', 'class'), '', 'running it again is never the default');
        await shot(page, 'approvals-recovery');
        await page.fill('#result', JSON.stringify({ messageId: messageIdFor(executionId) }));
        await page.fill('#reason', 'the mail log shows it went out');
        await page.click('#action-succeeded');
        await pageText(page, /succeeded: applied/, 'the recovery outcome');
      } finally {
        await page.close();
      }
      const done = await eventually(async () => {
        const s = await turnStatus(w.c, parked.workflowId);
        return s.closed && s;
      }, 'the turn completes');
      assert.equal(done.ledger[0]!.recoveredBy, 'bob');
      assert.equal(w.sink.deliveries(messageIdFor(executionId)), 1, 'never sent again');
    });

    it('a worker that counts only signed approvals: the browser signs with its own Ed25519 key', async () => {
      const page = await signIn(a.url, alice);
      try {
        await page.click('#key-link');
        await page.click('#create-key');
        const publicKey = (await page.textContent('#public-key'))!;
        const keyId = (await page.textContent('#key-id'))!;
        assert.match(keyId, /^ed25519:[0-9a-f]{16}$/);
        const approvers = join(dir, 'approvers.json');
        writeFileSync(
          approvers,
          JSON.stringify({ approvers: { alice: publicKey }, policy: [{ tool: '*', approvers: ['alice'] }] }),
        );
        await w.worker(scripted([{ toolCalls: [email('s1', 'ann@example.com')] }, { text: 'Sent.' }]), {
          extraArgs: ['--approvers', approvers],
        });
        const sessionId = uniq('appr-signed');
        const parked = await startTurn(w.c, sessionId, 'send the report to ann');
        assert.equal(parked.ledger[0]!.approval?.signed, true);
        // Unsigned, the API refuses and says how to sign.
        const unsigned = await call(a.url, '/api/decisions', alice, {
          executionId: parked.ledger[0]!.executionId,
          action: 'approve',
          argsDigest: parked.ledger[0]!.argsDigest,
        });
        assert.equal(unsigned.status, 400);
        assert.match(unsigned.body.error!, /counts only signed decisions from alice: sign with this browser's key/);
        await page.goto(`${a.url}/#/`);
        await pageText(page, new RegExp(sessionId), 'the waiting call');
        await page.click(`tr.call:has-text("${sessionId}")`);
        await pageText(page, /This browser signs as alice/, 'the signing key on the call page');
        assert.equal(await page.$('#action-approve_session'), null, 'standing approvals are not signed here');
        await page.click('#action-approve');
        await pageText(page, /approve: applied/, 'the signed approval applied');
        const done = await eventually(async () => {
          const s = await turnStatus(w.c, parked.workflowId);
          return s.closed && s;
        }, 'the turn completes');
        assert.equal(done.ledger[0]!.approvedBy, 'alice');
        assert.equal(done.ledger[0]!.signedApproval?.keyId, keyId);
      } finally {
        await page.close();
      }
    });
  });
});
