import { strict as assert } from 'node:assert';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cancelTurn } from '../client/cancel';
import { approve, recover } from '../client/decisions';
import { importSession } from '../client/import';
import { sessionStatus, turnStatus, waitForTurn } from '../client/session';
import type { WaitedTurn } from '../client/session';
import { IMPORT_MESSAGE_ID, sessionWorkflowId } from '../workflows/definitions';
import { unpairedToolCalls } from '../workflows/transcript';
import { useFakeModelServer } from './support/fakeModelServer';
import { recordHistory } from './support/histories';
import { runCli } from './support/processes';
import { eventually, sessionAfterCancel, startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Importing a session from another runtime, end to end: the CLI and the library, a real worker
// talking to a local server that speaks OpenAI's wire protocol, and the mail sink as the external
// system. A trailing call that may have run is never executed by the import.

const dir = mkdtempSync(join(tmpdir(), 'openworker-import-'));
const jsonl = (...lines: unknown[]): string => lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
const fileOf = (name: string, text: string): string => {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
};
const user = (content: string) => ({ role: 'user', content });
const assistant = (
  content: string | null,
  calls: { id: string; to?: string; name?: string; openworker?: unknown }[] = [],
) => ({
  role: 'assistant',
  content,
  ...(calls.length
    ? {
        tool_calls: calls.map((c) => ({
          id: c.id,
          type: 'function',
          function: {
            name: c.name ?? 'send_email',
            arguments: JSON.stringify(
              c.name === 'lookup_contact' ? { name: 'Ada' } : { to: c.to, subject: 'Hi', body: 'Hello.' },
            ),
          },
          ...(c.openworker ? { openworker: c.openworker } : {}),
        })),
      }
    : {}),
});
const result = (id: string, content: string) => ({ role: 'tool', tool_call_id: id, content });

describe('import a session from another runtime (openai-jsonl-v1)', function () {
  this.timeout(120_000);
  const w = useWorld();
  const fake = useFakeModelServer();

  const worker = () => w.worker(fake.spec());
  const delivered = (t: WaitedTurn, toolCallId: string): number => {
    const e = t.ledger.find((x) => x.toolCallId === toolCallId);
    assert.ok(e, `no ledger entry for ${toolCallId}`);
    return w.sink.deliveries(`<${e.executionId}@openworker-temporal>`);
  };
  const sentTo = (...to: string[]): number => w.sink.messages().filter((m) => m.to.some((r) => to.includes(r))).length;
  const resumeTurn = (sessionId: string) =>
    waitForTurn(w.c, { sessionId, messageId: IMPORT_MESSAGE_ID, timeoutMs: 60_000 });
  const closed = (t: { workflowId: string }) => turnClosed(w.c, t);

  it('no trailing calls (answered, or none): the transcript is imported, nothing runs, the next message sees it all', async () => {
    await worker();
    const sessionId = uniq('imp-done');
    const file = fileOf(
      'done.jsonl',
      jsonl(
        { role: 'system', content: 'old instructions' },
        user('email ann'),
        assistant('Sending.', [{ id: 'call_old', to: 'ann@example.com' }]),
        result('call_old', '{"messageId":"<x@old>"}'),
        assistant('Sent.'),
      ),
    );
    const res = await runCli(['import', sessionId, file, '--task-queue', w.taskQueue]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /imported 4 messages into session .* \(openai-jsonl-v1\)/);
    assert.match(res.stdout, /system message left out/);
    assert.match(res.stdout, /no tool call was left without a result/);
    const shown = await runCli(['show', sessionId, '--task-queue', w.taskQueue]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(
      shown.stdout,
      new RegExp(
        `imported \\(openai-jsonl-v1\\) from ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} at .*: 4 messages`,
      ),
    );
    assert.match(shown.stdout, /tool send_email \[call_old\]/);
    const s = await sessionStatus(w.c, sessionId);
    assert.equal(s.turns.length, 0, 'an import with nothing pending starts no turn');
    assert.equal(s.imported?.protocol, 'openai-jsonl-v1');

    fake.enqueue({ text: 'Anything else?' });
    const next = await startTurn(w.c, sessionId, 'thanks');
    const done = await closed(next);
    assert.equal(done.state, 'completed', done.error);
    assert.equal(done.turn, 1);
    const sent = fake.requests[0]!.body.messages;
    assert.deepEqual(
      sent.map((m) => m.role),
      ['user', 'assistant', 'tool', 'assistant', 'user'],
      'the provider gets the imported transcript, paired, and the new message',
    );
    assert.equal(sent[1]!.tool_calls?.[0]?.id, 'call_old');
    assert.equal(sent[2]!.tool_call_id, 'call_old');
    assert.equal(sentTo('ann@example.com'), 0, 'the old call is history, never re-run');
  });

  it('unanswered after approval, or with nothing known: recovery_required, never executed; recover decides', async () => {
    await worker();
    const sessionId = uniq('imp-unknown');
    const r = await importSession(w.c, {
      sessionId,
      source: 'test',
      jsonl: jsonl(
        user('email bea and cal'),
        assistant(null, [
          { id: 'call_bea', to: 'bea@example.com', openworker: { approval: 'approved', by: 'alice' } },
          { id: 'call_cal', to: 'cal@example.com' },
        ]),
      ),
    });
    assert.deepEqual(
      r.pending.map((p) => [p.call.id, p.disposition]),
      [
        ['call_bea', 'recovery_required'],
        ['call_cal', 'recovery_required'],
      ],
    );
    const parked = await resumeTurn(sessionId);
    assert.equal(parked.state, 'recovery_required');
    assert.equal(parked.turn, 1);
    for (const e of parked.ledger) {
      assert.equal(e.state, 'recovery_required', e.toolCallId);
      assert.equal(e.attempts, 0);
      assert.equal(e.runs, 0, 'no activity was ever scheduled for it');
      assert.equal(e.events[0]!.type, 'imported');
    }
    assert.equal(parked.ledger.find((e) => e.toolCallId === 'call_bea')!.approvedBy, 'alice');
    assert.equal(fake.requests.length, 0, 'no model call before the calls have results');
    assert.equal(sentTo('bea@example.com', 'cal@example.com'), 0, 'nothing was sent on import');

    fake.enqueue({ text: 'Bea was already emailed; Cal now too.' });
    assert.equal(
      (
        await recover(w.c, {
          sessionId,
          toolCallId: 'call_bea',
          decision: 'succeeded',
          result: { checked: 'sent before' },
          by: 'ops',
        })
      ).outcome,
      'applied',
    );
    assert.equal(
      (await recover(w.c, { sessionId, toolCallId: 'call_cal', decision: 'retry', by: 'ops' })).outcome,
      'applied',
    );
    const done = await closed(parked);
    assert.equal(done.state, 'completed', done.error);
    assert.equal(delivered(done, 'call_bea'), 0);
    assert.equal(delivered(done, 'call_cal'), 1, 'retried once, under its execution ID');
    const tools = fake.requests[0]!.body.messages.filter((m) => m.role === 'tool');
    assert.deepEqual(
      tools.map((m) => m.tool_call_id),
      ['call_bea', 'call_cal'],
    );
    assert.match(String(tools[0]!.content), /sent before/);
    const s = await sessionStatus(w.c, sessionId);
    assert.deepEqual(unpairedToolCalls(s.transcript), []);
    assert.equal(s.turns[0]!.messageId, IMPORT_MESSAGE_ID);
    await recordHistory(done.workflowId, 'turn-import-recover');
    await recordHistory(sessionWorkflowId(sessionId), 'session-import');
  });

  it('approval pending → asks; approved and marked never dispatched → runs once; rejected → the model is told; read → runs', async () => {
    await worker();
    const sessionId = uniq('imp-proven');
    fake.enqueue({ text: 'All settled.' });
    await importSession(w.c, {
      sessionId,
      source: 'test',
      jsonl: jsonl(
        user('four things'),
        assistant('On it.', [
          { id: 'call_ask', to: 'dan@example.com', openworker: { approval: 'pending' } },
          { id: 'call_go', to: 'eve@example.com', openworker: { approval: 'approved', dispatched: false, by: 'bob' } },
          { id: 'call_no', to: 'fay@example.com', openworker: { approval: 'rejected', by: 'bob' } },
          { id: 'call_read', name: 'lookup_contact' },
        ]),
      ),
    });
    const waiting = await resumeTurn(sessionId);
    assert.equal(waiting.state, 'awaiting_approval');
    const by = (id: string) => waiting.ledger.find((e) => e.toolCallId === id)!;
    assert.equal(by('call_ask').state, 'awaiting_approval');
    assert.equal(by('call_no').state, 'rejected');
    const go = await eventually(async () => {
      const t = await turnStatus(w.c, waiting.workflowId);
      const e = t.ledger.find((x) => x.toolCallId === 'call_go');
      return e?.state === 'succeeded' && e;
    }, 'the proven-never-dispatched call runs without a new approval');
    assert.equal(go.approvedBy, 'bob');
    assert.equal(w.sink.deliveries(`<${go.executionId}@openworker-temporal>`), 1);
    assert.equal((await approve(w.c, { sessionId, toolCallId: 'call_ask', by: 'alice' })).outcome, 'applied');
    const done = await closed(waiting);
    assert.equal(done.state, 'completed', done.error);
    assert.equal(delivered(done, 'call_ask'), 1);
    assert.equal(delivered(done, 'call_go'), 1, 'still once');
    assert.equal(delivered(done, 'call_no'), 0);
    assert.equal(done.ledger.find((e) => e.toolCallId === 'call_read')!.state, 'succeeded');
    const tools = fake.requests[0]!.body.messages.filter((m) => m.role === 'tool');
    assert.deepEqual(
      tools.map((m) => m.tool_call_id),
      ['call_ask', 'call_go', 'call_no', 'call_read'],
      'results in call order',
    );
    assert.match(String(tools[2]!.content), /rejected before the import by bob/);
    await recordHistory(done.workflowId, 'turn-import-proven');
  });

  it('cancelling the resume turn: a parked imported call gets "outcome unknown", the session goes on', async () => {
    await worker();
    const sessionId = uniq('imp-cancel');
    await importSession(w.c, {
      sessionId,
      source: 'test',
      jsonl: jsonl(user('email gus'), assistant(null, [{ id: 'call_gus', to: 'gus@example.com' }])),
    });
    const parked = await resumeTurn(sessionId);
    assert.equal(parked.state, 'recovery_required');
    const t = await cancelTurn(w.c, { sessionId });
    assert.equal(t.state, 'cancelled');
    const s = await sessionAfterCancel(w.c, sessionId);
    const res = s.transcript.find((m) => m.role === 'tool');
    assert.match(
      res?.role === 'tool' ? res.content : '',
      /^Error: outcome unknown: the turn was cancelled while this call \(execution owx-[0-9a-f]+\) was in flight; check before doing it again$/,
    );
    fake.enqueue({ text: 'Understood.' });
    const next = await closed(await startTurn(w.c, sessionId, 'never mind'));
    assert.equal(next.state, 'completed', next.error);
    assert.equal(sentTo('gus@example.com'), 0);
  });

  it('bad input: one line naming the file and line, exit 2, nothing started; an existing session is refused', async () => {
    await worker();
    const sessionId = uniq('imp-bad');
    const bad = fileOf('bad.jsonl', `${JSON.stringify(user('hi'))}\n{not json\n`);
    const r1 = await runCli(['import', sessionId, bad, '--task-queue', w.taskQueue]);
    assert.equal(r1.code, 2);
    assert.equal(r1.stderr.trim(), `error: ${bad}: line 2: not JSON; expected one chat message per line`);
    const missing = await runCli(['import', sessionId, join(dir, 'nope.jsonl'), '--task-queue', w.taskQueue]);
    assert.equal(missing.code, 2);
    assert.match(
      missing.stderr,
      /^error: cannot read .*nope\.jsonl: ENOENT; give the path of a JSONL file or - for stdin$/m,
    );
    const show = await runCli(['show', sessionId, '--task-queue', w.taskQueue]);
    assert.notEqual(show.code, 0, 'no session was started');
    const good = fileOf('good.jsonl', jsonl(user('hi'), assistant('hello')));
    assert.equal((await runCli(['import', sessionId, good, '--task-queue', w.taskQueue])).code, 0);
    const again = await runCli(['import', sessionId, good, '--task-queue', w.taskQueue]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /^error: session '.*' already exists \(or existed\); import into a new session id$/m);
  });
});
