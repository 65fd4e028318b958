import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { approvalsApp } from '../apps/approvals/app';
import { resolveCall, type WaitingCalls } from '../apps/approvals/calls';
import { createToken } from '../apps/approvals/tokens';
import { approve } from '../client/decisions';
import { inbox, type InboxItem } from '../client/inspect';
import { INBOX_MEMO } from '../workflows/definitions';
import { readInboxMemo } from '../workflows/inboxRows';
import { recordHistory } from './support/histories';
import { runCli } from './support/processes';
import { emailCall, eventually, scripted, startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// The inbox from visibility alone: a parked turn keeps its rows in memo (inbox-memo-v1), and the
// inbox, the approvals app and `inbox --json` list them with no query to a turn, so they answer
// the same with the turn's worker gone. A real dev server and worker process.

const BODY = `Numbers attached. ${'Details follow. '.repeat(30)}`;

describe('the inbox from visibility alone (memo rows)', function () {
  this.timeout(90_000);
  const w = useWorld();

  it('lists a parked turn from its memo with its worker gone (no query); the memo follows the rows while parked; decided calls leave it', async () => {
    const sessionId = uniq('memo');
    const script = scripted([
      { toolCalls: [emailCall('c1', 'ann@example.com', { subject: 'Report', body: BODY }), emailCall('c2')] },
      { text: 'Sent both.' },
    ]);
    let worker = await w.worker(script);
    const parked = await startTurn(w.c, sessionId, 'send the report and say hi');
    assert.equal(parked.state, 'awaiting_approval');
    const handle = w.c.client.workflow.getHandle(parked.workflowId);
    const listed = await eventually(async () => {
      const items = await inbox(w.c, { sessionId });
      return items.length === 2 && items;
    }, 'the inbox lists both calls');
    const memo = readInboxMemo((await handle.describe()).memo?.[INBOX_MEMO]);
    assert.deepEqual(
      memo?.rows.map((r) => r.toolCallId),
      ['c1', 'c2'],
      'the turn keeps both rows in its memo',
    );

    // The turn's worker is gone: a query could not be answered, the inbox is the same.
    await worker.kill('SIGKILL');
    const t0 = Date.now();
    const without = await inbox(w.c, { sessionId });
    assert.ok(Date.now() - t0 < 5_000, `listed in ${Date.now() - t0} ms`);
    const strip = (items: InboxItem[]) => items.map(({ notification: _n, ...i }) => i);
    assert.deepEqual(strip(without), strip(listed));
    const c1 = without.find((i) => i.toolCallId === 'c1')!;
    assert.equal(c1.state, 'awaiting_approval');
    assert.equal(c1.tool, 'send_email');
    assert.equal(c1.workflowId, parked.workflowId);
    assert.equal(c1.executionId, parked.ledger[0]!.executionId);
    assert.equal(c1.argsDigest, parked.ledger[0]!.argsDigest);
    assert.deepEqual(c1.notification, { park: 'approval', notified: false });
    // A preview, not the arguments: a long body is clipped and says how long it is.
    assert.equal(c1.argsPreview.to, 'ann@example.com');
    assert.match(c1.argsPreview.body!, /… \(\d+ chars\)$/);
    assert.ok(!('arguments' in c1), 'the list carries no arguments');
    // Filters: the tool and the state on the rows, the session by search attribute.
    assert.equal((await inbox(w.c, { sessionId, tool: 'send_email' })).length, 2);
    assert.equal((await inbox(w.c, { sessionId, tool: 'charge_card' })).length, 0);
    assert.equal((await inbox(w.c, { sessionId, state: 'recovery_required' })).length, 0);
    // The approvals app's list and a call found by its execution ID alone, and `inbox --json`.
    const dir = mkdtempSync(join(tmpdir(), 'openworker-memo-'));
    try {
      const tokensFile = join(dir, 'tokens.json');
      const res = await approvalsApp({ client: w.c, tokensFile }).request('/api/inbox', {
        headers: { authorization: `Bearer ${createToken('ann', tokensFile)}` },
      });
      assert.equal(res.status, 200);
      const calls = ((await res.json()) as WaitingCalls).calls.filter((c) => c.sessionId === sessionId);
      assert.deepEqual(
        calls.map((c) => c.toolCallId),
        ['c1', 'c2'],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    assert.deepEqual(await resolveCall(w.c, c1.executionId), { sessionId, turn: 1, toolCallId: 'c1' });
    const cli = await runCli(['inbox', '--json', '--session', sessionId, '--task-queue', w.taskQueue]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.deepEqual((JSON.parse(cli.stdout) as { calls: InboxItem[] }).calls.map((i) => i.toolCallId).sort(), [
      'c1',
      'c2',
    ]);

    // Back with a worker: c1 approved, the turn still waits for c2 and its memo holds c2 alone.
    worker = await w.worker(script);
    await approve(w.c, { sessionId, toolCallId: 'c1', by: 'ann' });
    await eventually(async () => {
      const items = await inbox(w.c, { sessionId });
      return items.length === 1 && items[0]!.toolCallId === 'c2';
    }, 'c1 leaves the inbox, c2 stays');
    await approve(w.c, { sessionId, toolCallId: 'c2', by: 'ann' });
    const done = await turnClosed(w.c, parked);
    assert.equal(done.state, 'completed');
    await eventually(async () => (await inbox(w.c, { sessionId })).length === 0, 'the inbox is empty');

    // History: one memo upsert per distinct set of rows while parked (both calls, then c2); none once
    // the turn runs again (its search attribute drops it from the inbox); no patch marker.
    const events = (await handle.fetchHistory()).events ?? [];
    const upserts = events.filter((e) => e.workflowPropertiesModifiedEventAttributes);
    assert.equal(upserts.length, 2, 'two memo upserts');
    assert.equal(
      events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch').length,
      0,
      'no marker',
    );
    await recordHistory(parked.workflowId, 'turn-inbox-memo');
  });
});
