import { strict as assert } from 'node:assert';
import { Worker } from '@temporalio/worker';
import { faultSinks } from '../activities/faults';
import { approve } from '../client/decisions';
import { defaultDataConverter } from '../runtime/dataConverter';
import { workflowSource } from '../worker/worker';
import { OpenWorkerError, sendMessage, sessionStatus, turnStatus, waitForTurn } from '../client/session';
import { messageSignal, sessionWorkflowId } from '../workflows/definitions';
import type { TurnResult } from '../workflows/types';
import { eventually, scripted, startTurn, uniq } from './support/scenario';
import { useWorld } from './support/world';

// End to end: hostile sizes from the model, a tool and a client, each refused or cut with a clear
// message, nothing executed without approval, and history bounded.

const charge = (id: string, customer = 'ann', amount = 5) => ({
  id,
  name: 'charge_card',
  arguments: { customer, amount },
});

describe('size limits end to end', function () {
  this.timeout(90_000);
  const w = useWorld();

  it('oversized arguments: an invalid call with a clear error, no approval asked, nothing executed, the arguments not kept', async () => {
    const sessionId = uniq('bigargs');
    await w.worker(
      scripted([
        { text: 'Charging.', toolCalls: [charge('c1', 'x'.repeat(70_000))] },
        { text: 'My arguments were too large.' },
      ]),
    );
    const before = w.payments.ledger().requests.length;
    const t = await startTurn(w.c, sessionId, 'charge x');
    assert.equal(t.state, 'completed', 'nothing waits for an approval');
    const [e] = t.ledger;
    assert.equal(e!.state, 'invalid');
    assert.match(
      e!.error!,
      /^arguments for 'charge_card' are 70026 bytes; the limit is 65536 bytes: pass less data per call/,
    );
    assert.deepEqual(e!.arguments, { omitted: '70026 bytes of arguments, over the limit' });
    assert.ok(!e!.events.some((ev) => ev.type === 'awaiting_approval'));
    assert.equal(w.payments.ledger().requests.length, before, 'no request reached the payments API');
    const result = (await w.c.client.workflow.getHandle(t.workflowId).result()) as TurnResult;
    const tool = result.messages.find((m) => m.role === 'tool');
    assert.match(
      tool && tool.role === 'tool' ? tool.content : '',
      /^Error: arguments for 'charge_card' are 70026 bytes/,
    );
  });

  it('too many calls in one response: the first N wait for approval, one invalid call says how many were dropped, the ledger stays bounded', async () => {
    const sessionId = uniq('manycalls');
    const calls = Array.from({ length: 500 }, (_, i) => charge(`c${i + 1}`));
    await w.worker(scripted([{ text: 'Charging 500 times.', toolCalls: calls }, { text: 'x' }]), {
      env: { OPENWORKER_MAX_TOOL_CALLS: '3' },
    });
    const before = w.payments.ledger().requests.length;
    const t = await startTurn(w.c, sessionId, 'charge ann');
    assert.equal(t.state, 'awaiting_approval');
    assert.deepEqual(
      t.ledger.map((e) => [e.toolCallId, e.state]),
      [
        ['c1', 'awaiting_approval'],
        ['c2', 'awaiting_approval'],
        ['c3', 'awaiting_approval'],
        ['c4', 'invalid'],
      ],
    );
    assert.match(
      t.ledger[3]!.error!,
      /^the response has 500 tool calls; at most 3 are taken from one response, so this call and the 496 after it \(not listed\) were not executed/,
    );
    assert.equal(w.payments.ledger().requests.length, before, 'nothing ran without an approval');
    const history = await w.c.client.workflow.getHandle(t.workflowId).fetchHistory();
    assert.ok(history.events!.length < 40, `history has ${history.events!.length} events`);
  });

  it('an oversized result of an external tool: succeeded (the charge happened once), with a truncation note for the model', async () => {
    const sessionId = uniq('bigresult');
    await w.worker(scripted([{ text: 'Charging.', toolCalls: [charge('c1')] }, { text: 'Charged.' }]), {
      env: { OPENWORKER_MAX_RESULT_BYTES: '40' },
    });
    const parked = await startTurn(w.c, sessionId, 'charge ann');
    assert.equal(parked.state, 'awaiting_approval');
    await approve(w.c, { sessionId, toolCallId: 'c1', by: 'alice' });
    const done = await eventually(async () => {
      const s = await turnStatus(w.c, parked.workflowId);
      return s.closed && s;
    }, 'turn completes');
    assert.equal(done.state, 'completed');
    const e = done.ledger[0]!;
    assert.equal(e.state, 'succeeded');
    assert.equal(w.payments.effects(e.executionId), 1, 'charged exactly once');
    const r = e.result as { truncated: boolean; bytes: number; preview: string; note: string };
    assert.equal(r.truncated, true);
    assert.ok(r.bytes > 40);
    assert.equal(r.preview.length, 40);
    assert.match(
      r.note,
      /^the tool ran; its result was \d+ bytes, over the limit of 40: only the first 40 bytes of its JSON are kept$/,
    );
    const st = await sessionStatus(w.c, sessionId);
    const tool = st.transcript.find((m) => m.role === 'tool');
    assert.match(tool && tool.role === 'tool' ? tool.content : '', /"truncated":true.*"note":"the tool ran/);
  });

  it('an oversized user message: the client refuses it, the session records a raw one, a raw turn fails without calling the model', async () => {
    const sessionId = uniq('bigmsg');
    await w.worker(scripted([]));
    const big = 'x'.repeat(40_000);
    await assert.rejects(sendMessage(w.c, { sessionId, text: big }), (err: Error) => {
      assert.ok(err instanceof OpenWorkerError && err.code === 'bad_input');
      assert.equal(
        err.message,
        'the message is 40000 bytes; the limit is 32768 bytes: shorten it, or attach large content through a tool; nothing was sent',
      );
      return true;
    });
    // A raw signal (any Temporal client) is refused by the session and recorded; the session lives on.
    await w.c.client.workflow.signalWithStart('session', {
      workflowId: sessionWorkflowId(sessionId),
      taskQueue: w.taskQueue,
      args: [{ sessionId }],
      signal: messageSignal,
      signalArgs: [{ text: big, messageId: 'm-big' }],
    });
    const st = await eventually(async () => {
      const s = await sessionStatus(w.c, sessionId);
      return !!s.refused?.length && s;
    }, 'the session records the refusal');
    assert.deepEqual(
      st.refused!.map((r) => [r.messageId, r.reason]),
      [
        [
          'm-big',
          'the message is 40000 bytes; the limit is 32768 bytes: shorten it, or attach large content through a tool',
        ],
      ],
    );
    assert.equal(st.pending.length, 0);
    assert.equal(st.turns.length, 0);
    await assert.rejects(
      waitForTurn(w.c, { sessionId, messageId: 'm-big', timeoutMs: 10_000 }),
      /^OpenWorkerError: session '.*' refused message m-big: the message is 40000 bytes/,
    );
    // A turn started directly with one: failed, no model call (the script has no steps), no message kept.
    const handle = await w.c.client.workflow.start('agentTurn', {
      taskQueue: w.taskQueue,
      workflowId: uniq('rawturn'),
      args: [{ sessionId: uniq('raw'), turn: 1, history: [], message: big }],
    });
    const r = (await handle.result()) as TurnResult;
    assert.equal(r.state, 'failed');
    assert.equal(
      r.error,
      'the message is 40000 bytes; the limit is 32768 bytes: shorten it, or attach large content through a tool; the model was not called',
    );
    assert.deepEqual(r.messages, []);
    // Neither the session's refusal nor the raw turn's asks a patch (baseline 1).
    for (const id of [sessionWorkflowId(sessionId), handle.workflowId]) {
      const history = await w.c.client.workflow.getHandle(id).fetchHistory();
      assert.equal(
        history.events!.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch').length,
        0,
        `${id} has no patch marker`,
      );
      await Worker.runReplayHistory(
        { ...workflowSource(), sinks: faultSinks(), dataConverter: defaultDataConverter() },
        history,
        id,
      );
    }
  });
});
