import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { approve } from '../client/decisions';
import { connectClient } from '../client/connection';
import type { OpenWorkerClient } from '../client/connection';
import { startCodecServer } from '../apps/codecServer';
import { turnStatus } from '../client/session';
import { startDevServer } from '../dev/server';
import type { DevServer } from '../dev/server';
import { launchBrowser, pageText as text, requireChromium, shot } from './support/browser';
import { eventually, scripted, startTurn, uniq } from './support/scenario';
import { useWorld } from './support/world';

// The Temporal Web UI, as an operator uses it, in headless Chromium: find the parked turn by the
// OpenWorkerState search attribute, open it, read the execution ID and the ledger there, and follow
// the session to its child turns. Screenshots land in test-artifacts/; docs/chat-and-webui.md shows
// copies of them (docs/screenshots/).

describe('Temporal Web UI (headless Chromium)', function () {
  this.timeout(240_000);
  const w = useWorld();
  let server: DevServer | undefined;
  let codec: Awaited<ReturnType<typeof startCodecServer>> | undefined;
  let c: OpenWorkerClient | undefined;
  let browser: Browser | undefined;
  let dir: string;

  before(async function () {
    requireChromium(this);
    dir = mkdtempSync(join(tmpdir(), 'openworker-webui-'));
    codec = await startCodecServer();
    server = await startDevServer({ port: 0, dbFile: join(dir, 'temporal.db'), codecEndpoint: codec.url });
    browser = await launchBrowser();
  });
  after(async () => {
    await browser?.close();
    await c?.close();
    await server?.stop();
    await codec?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('filter by OpenWorkerState, open the parked turn: execution ID, tool and target, ledger, session ↔ turn', async () => {
    c = await connectClient({ address: server!.address, taskQueue: w.taskQueue });
    const script = scripted([
      {
        toolCalls: [
          { id: 'c1', name: 'send_email', arguments: { to: 'ann@example.com', subject: 'Launch', body: 'Monday.' } },
        ],
      },
      { text: 'done' },
    ]);
    const w1 = await w.worker(script, { address: server!.address, faults: 'tool.after_execute@send_email' });
    const sessionId = uniq('webui');
    const parked = await startTurn(c, sessionId, 'email ann about the launch');
    await approve(c, { sessionId, toolCallId: 'c1', by: 'alice' });
    const executionId = await w1.faultReached('tool.after_execute');
    await w1.kill('SIGKILL');
    await w.worker(script, { address: server!.address });
    await eventually(
      async () => (await turnStatus(c!, parked.workflowId)).state === 'recovery_required',
      'the call parks',
      60_000,
    );

    const page = await browser!.newPage({ viewport: { width: 1400, height: 1000 } });
    const ui = server!.uiUrl!;
    // (a) the operator's filter
    const query = encodeURIComponent('OpenWorkerState="recovery_required"');
    await page.goto(`${ui}/namespaces/default/workflows?query=${query}`);
    await text(page, new RegExp(parked.workflowId), 'the parked turn is listed under the filter');
    await shot(page, 'webui-1-filter-recovery-required');

    // (b) the turn: each tool activity under its execution ID, its summary naming the tool and target
    await page.getByText(parked.workflowId, { exact: true }).first().click();
    const turnPage = await text(
      page,
      new RegExp(`execute send_email ${executionId} → ann@example\\.com`),
      'the activity summary on the turn page',
    );
    assert.match(
      turnPage,
      /"message": "email ann about the launch"/,
      'the input is decoded through the codec endpoint',
    );
    assert.doesNotMatch(turnPage, /Codec Server could not connect/);
    await shot(page, 'webui-2-turn');

    // (c) (e) the static summary and the ledger, in the workflow's user metadata
    await page
      .getByRole('tab', { name: 'User Metadata' })
      .or(page.getByText('User Metadata', { exact: true }))
      .first()
      .click();
    const meta = await text(page, /recovery_required/, 'the ledger (current details) shows the parked call');
    assert.match(
      meta,
      new RegExp(`Turn 1 of session ${sessionId}: email ann about the launch`),
      'the static summary names the turn',
    );
    assert.match(meta, new RegExp(executionId), 'the ledger names the execution ID');
    await shot(page, 'webui-3-ledger');

    // (d) the session and its child turns, linked
    await page.goto(`${ui}/namespaces/default/workflows/session-${sessionId}`);
    await page.getByText('Relationships').first().click();
    await text(page, new RegExp(parked.workflowId), 'the session lists its child turn');
    await shot(page, 'webui-4-session');
    await page.close();
  });
});
