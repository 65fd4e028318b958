import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
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

// Runs in the page (no DOM types here): the innermost element showing the text, and the nearest
// edge that cuts what overflows (an ancestor that does not let overflow show, else the frame's).
const WHERE_DRAWN = `(n) => {
  const all = [...document.querySelectorAll('body *')].filter((el) => el.innerText && el.innerText.includes(n));
  const el = all.find((a) => !all.some((b) => b !== a && a.contains(b)));
  if (!el) return undefined;
  const r = el.getBoundingClientRect();
  let clip = document.documentElement.clientWidth;
  for (let p = el.parentElement; p; p = p.parentElement)
    if (getComputedStyle(p).overflowX !== 'visible') clip = Math.min(clip, p.getBoundingClientRect().right);
  return { bottom: r.bottom, right: r.right, clip };
}`;

/**
 * Where the innermost element showing `needle` is drawn, in page coordinates, and the right edge of
 * the box it is drawn in (its frame's, when the markdown renders in a frame): text past that edge is cut.
 */
async function placed(page: Page, needle: string): Promise<{ bottom: number; right: number; panelRight: number }> {
  for (const frame of page.frames()) {
    const hit = (await frame.evaluate(`(${WHERE_DRAWN})(${JSON.stringify(needle)})`).catch(() => undefined)) as
      { bottom: number; right: number; clip: number } | undefined;
    if (!hit) continue;
    const box = frame === page.mainFrame() ? { x: 0, y: 0 } : await (await frame.frameElement()).boundingBox();
    return {
      bottom: hit.bottom + (box?.y ?? 0),
      right: hit.right + (box?.x ?? 0),
      panelRight: hit.clip + (box?.x ?? 0),
    };
  }
  throw new Error(`'${needle}' is not on the page`);
}

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
    await text(
      page,
      new RegExp(`execute send_email ${executionId} → ann@example\\.com`),
      'the activity summary on the turn page',
    );
    // The input is decoded by a call to the codec endpoint that may finish after the summary shows.
    const turnPage = await text(
      page,
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
    // #28: that it waits for a person comes first, and the ledger's lines are not cut at the panel's edge.
    assert.match(
      meta,
      /Waiting for a person to decide a call: c1 send_email → ann@example\.com \(recovery_required: retry, succeeded or failed\)/,
    );
    const headline = await placed(page, 'Waiting for a person');
    assert.ok(headline.bottom <= 1000, `the headline is on the first screen: ${JSON.stringify(headline)}`);
    const line = await placed(page, 'alice'); // who approved: the last column of the old table
    assert.ok(line.right <= line.panelRight + 1, `the ledger line is not clipped: ${JSON.stringify(line)}`);
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
