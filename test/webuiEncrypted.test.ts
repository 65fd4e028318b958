import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { Browser } from 'playwright-core';
import type { CodecServer } from '../apps/codecServer';
import { newCodecToken, startCodecServer } from '../apps/codecServer';
import type { OpenWorkerClient } from '../client/connection';
import { defaultDataConverter, endpointCodec } from '../runtime/dataConverter';
import { startDevServer } from '../dev/server';
import type { DevServer } from '../dev/server';
import { sessionWorkflowId } from '../workflows/definitions';
import { launchBrowser, pageText, requireChromium, shot } from './support/browser';
import { eventually, scripted, startTurn, uniq } from './support/scenario';
import { turnStatus } from '../client/session';
import { messageIdFor } from '../activities/tools/sendEmail';
import { useWorld } from './support/world';
import { settingsFrom } from '../runtime/settings';

// Encrypted payloads in the Web UI, the way `dev` wires them: a worker process and a client seal
// every payload with a key, the server stores ciphertext, and the UI (given the token-protected
// codec endpoint as `--ui-codec-endpoint`) shows plain text in headless Chromium.

describe('Temporal Web UI with encrypted payloads and a codec token (headless Chromium)', function () {
  this.timeout(180_000);
  const w = useWorld();
  const keys = `ui1=${randomBytes(32).toString('base64')}`;
  const token = newCodecToken();
  let dir: string;
  let codec: CodecServer | undefined;
  let server: DevServer | undefined;
  let connection: Connection | undefined;
  let browser: Browser | undefined;

  // A client with the keys the worker has, on this test's server and task queue.
  const keyed = () => settingsFrom({ ...process.env, OPENWORKER_ENCRYPTION_KEYS: keys });
  const keyedClient = (): OpenWorkerClient => ({
    client: new Client({ connection: connection!, dataConverter: defaultDataConverter(keyed()) }),
    settings: keyed(),
    connection: connection!,
    address: server!.address,
    namespace: 'default',
    taskQueue: w.taskQueue,
    close: async () => undefined,
  });

  before(async function () {
    requireChromium(this);
    dir = mkdtempSync(join(tmpdir(), 'openworker-webui-enc-'));
    // The codec endpoint's keys come from the same variable the worker process gets.
    codec = await startCodecServer({
      codec: endpointCodec({ ...process.env, OPENWORKER_ENCRYPTION_KEYS: keys }),
      token,
    });
    server = await startDevServer({ port: 0, dbFile: join(dir, 'temporal.db'), codecEndpoint: codec.uiEndpoint });
    connection = await Connection.connect({ address: server.address });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await connection?.close();
    await server?.stop();
    await codec?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('history holds ciphertext only; the UI shows the plain text through the codec endpoint; without the token it is refused', async () => {
    const secret = `sunflower-${uniq('s')}`;
    const to = `${uniq('zed')}@example.com`;
    const script = scripted([
      {
        text: 'Sending.',
        toolCalls: [{ id: 'c1', name: 'send_email', arguments: { to, subject: 'Plan', body: `the ${secret}` } }],
      },
      { text: 'done' },
    ]);
    await w.worker(script, { address: server!.address, env: { OPENWORKER_ENCRYPTION_KEYS: keys } });
    const keyed = keyedClient();
    const sessionId = uniq('webui-enc');
    const parked = await startTurn(keyed, sessionId, `email ${to} the ${secret}`);
    assert.equal(parked.state, 'awaiting_approval');
    assert.equal((parked.ledger[0]!.arguments as { to: string }).to, to, 'the keyed client reads plain values');

    // (a) Raw history, through a client without any codec: neither the text nor the recipient.
    const raw = new Client({ connection: connection! });
    for (const id of [parked.workflowId, sessionWorkflowId(sessionId)]) {
      const bytes = Buffer.from(
        temporal.api.history.v1.History.encode(await raw.workflow.getHandle(id).fetchHistory()).finish(),
      ).toString('latin1');
      assert.ok(!bytes.includes(secret), `${id}: the text is in the server's history`);
      assert.ok(!bytes.includes(to), `${id}: the recipient is in the server's history`);
      assert.ok(bytes.includes('binary/openworker-encrypted'), `${id}: payloads are sealed`);
    }

    // (b) The browser: the UI posts to <endpoint>/<token>/decode and shows the plain text.
    const page = await browser!.newPage({ viewport: { width: 1400, height: 1000 } });
    const codecCalls: { url: string; status: number }[] = [];
    page.on('response', (r) => {
      if (r.url().startsWith(codec!.url) && r.request().method() === 'POST')
        codecCalls.push({ url: r.url(), status: r.status() });
    });
    try {
      await page.goto(`${server!.uiUrl!}/namespaces/default/workflows/${parked.workflowId}`);
      const shown = await pageText(
        page,
        new RegExp(`email ${to.replace(/\./g, '\\.')} the ${secret}`),
        'the decrypted input on the turn page',
      );
      assert.doesNotMatch(shown, /Codec Server could not connect/);
      await shot(page, 'webui-encrypted-turn');
    } finally {
      await page.close();
    }
    assert.ok(codecCalls.length > 0, 'the UI decoded through the codec endpoint');
    for (const call of codecCalls) {
      assert.ok(call.url.startsWith(`${codec!.url}/${token}/decode`), `the UI calls the tokened path: ${call.url}`);
      assert.equal(call.status, 200, call.url);
    }

    // (c) The same request without the token, from the UI's origin or none, is refused.
    const body = JSON.stringify({ payloads: [] });
    const noToken: Record<string, string>[] = [
      { 'content-type': 'application/json' },
      { 'content-type': 'application/json', origin: new URL(server!.uiUrl!).origin },
    ];
    for (const headers of noToken) {
      const res = await fetch(`${codec!.url}/decode`, { method: 'POST', headers, body });
      assert.equal(res.status, 401);
      assert.match(((await res.json()) as { error: string }).error, /needs its token/);
    }
    const wrong = await fetch(`${codec!.url}/${newCodecToken()}/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    assert.equal(wrong.status, 401);
  });

  it('an operator approves from the Web UI (More Actions → Send a Signal), and a refused decision shows in the current details', async () => {
    const script = scripted([
      {
        toolCalls: [
          { id: 'c1', name: 'send_email', arguments: { to: 'ann@example.com', subject: 'Plan', body: 'the plan' } },
        ],
      },
      { text: 'done' },
    ]);
    await w.worker(script, { address: server!.address, env: { OPENWORKER_ENCRYPTION_KEYS: keys } });
    const keyed = keyedClient();
    const parked = await startTurn(keyed, uniq('webui-signal'), 'email ann the plan');
    assert.equal(parked.state, 'awaiting_approval');
    const page = await browser!.newPage({ viewport: { width: 1400, height: 1000 } });
    const sendSignal = async (name: string, input: unknown) => {
      await page.getByRole('button', { name: 'More Actions' }).click();
      await page.locator('[data-testid="signal-button"]:visible').click();
      const dialog = page.locator('[data-testid="signal-confirmation-modal"]:visible');
      await dialog.locator('[data-testid="signal-select-button"]').click();
      const option = dialog.locator('#signal-select-select li[role="option"]').filter({ hasText: name }).first();
      const described = (await option.textContent()) ?? '';
      await option.click();
      // The editor is CodeMirror: typed text goes through its own input handling, as a person's would.
      await dialog.locator('[role="textbox"][aria-label="Data"]').click();
      await page.keyboard.insertText(JSON.stringify(input));
      // Leaving the editor reformats the JSON and re-lays out the dialog: submit after that.
      await dialog.getByText('Single JSON payload supported.').click();
      await dialog.locator('[data-testid="confirm-modal-button"]:enabled').click();
      await dialog.waitFor({ state: 'hidden' });
      return described;
    };
    try {
      const details = async (pattern: RegExp, what: string) => {
        await page.goto(`${server!.uiUrl!}/namespaces/default/workflows/${parked.workflowId}`);
        await page
          .getByRole('tab', { name: 'User Metadata' })
          .or(page.getByText('User Metadata', { exact: true }))
          .first()
          .click();
        return pageText(page, pattern, what);
      };
      await details(/awaiting_approval/, 'the parked turn in its current details');
      // A stale digest: a signal cannot answer, so the turn's current details say it was not applied.
      const described = await sendSignal('approve', { toolCallId: 'c1', by: 'ui-ops', argsDigest: 'sha256:0000' });
      for (const field of ['toolCallId', 'by', 'argsDigest?', 'executionId?', 'decisionId?', 'signature?'])
        assert.ok(described.includes(field), `the UI's description of approve names ${field}: ${described}`);
      await details(
        /Decisions not applied[\s\S]*ui-ops[\s\S]*argsDigest does not match/,
        'the refusal in the current details',
      );
      await shot(page, 'webui-signal-refused');
      await sendSignal('approve', { toolCallId: 'c1', by: 'ui-ops', argsDigest: parked.ledger[0]!.argsDigest });
    } finally {
      await page.close();
    }
    const done = await eventually(async () => {
      const s = await turnStatus(keyed, parked.workflowId);
      return s.closed && s;
    }, 'the turn completes after the UI approval');
    assert.equal(done.ledger[0]!.approvedBy, 'ui-ops');
    assert.equal(w.sink.deliveries(messageIdFor(done.ledger[0]!.executionId)), 1);
    // The signal the UI sent went through the codec endpoint's /encode: history holds ciphertext.
    const raw = new Client({ connection: connection! });
    const history = await raw.workflow.getHandle(parked.workflowId).fetchHistory();
    const signals = history.events!.filter((e) => e.workflowExecutionSignaledEventAttributes);
    assert.equal(signals.length, 2);
    for (const e of signals) {
      const p = e.workflowExecutionSignaledEventAttributes!.input!.payloads![0]!;
      assert.equal(Buffer.from(p.metadata!.encoding!).toString(), 'binary/openworker-encrypted');
    }
  });
});
