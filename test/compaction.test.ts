import { strict as assert } from 'node:assert';
import { sendMessage, sessionStatus, waitForTurn } from '../client/session';
import { sessionStatusQuery, sessionWorkflowId, turnWorkflowId } from '../workflows/definitions';
import { useFakeModelServer } from './support/fakeModelServer';
import { recordHistory } from './support/histories';
import { uniq } from './support/scenario';
import { useWorld } from './support/world';

// Compaction (#29): once what the model sees nears the budget, the next turn first has the model
// summarise the older messages (an activity of its own) and then shows it the summary in their
// place; the transcript keeps every message. A worker killed after storing a summary leaves a retry
// that summarises again, and the turn goes on.

const BUDGET = 1000; // tokens, estimated as UTF-8 bytes ÷ 4: each message below is ~154
const line = (what: string) =>
  `${what}: ${'the quarterly figures, line by line, with notes. '.repeat(12)}`.slice(0, 600);

describe('context compaction', function () {
  this.timeout(120_000);
  const w = useWorld();
  const fake = useFakeModelServer();

  it('summarises older turns once near the budget, keeps the record whole, and survives a kill mid-compaction', async () => {
    const sessionId = uniq('compact');
    const env = { OPENWORKER_CONTEXT_TOKENS: String(BUDGET) };
    fake.enqueue({ text: line('a1') }, { text: line('a2') }, { text: line('a3') });
    let worker = await w.worker(fake.spec(), { env });
    const turn = async (n: number): Promise<void> => {
      const sent = await sendMessage(w.c, { sessionId, text: line(`u${n}`) });
      const done = await waitForTurn(w.c, { sessionId, messageId: sent.messageId, timeoutMs: 60_000 });
      assert.equal(done.state, 'completed', `turn ${n}`);
    };
    for (const n of [1, 2, 3]) await turn(n);
    assert.equal(fake.requests.length, 3, 'no compaction below 80% of the budget');

    // Turn 4 compacts first; the worker dies once its summary is stored, the next one summarises again.
    await worker.kill('SIGKILL');
    worker = await w.worker(fake.spec(), { env, faults: 'model.after_summary_stored' });
    fake.enqueue({ text: 'SUMMARY-ONE' }, { text: 'SUMMARY-TWO' }, { text: line('a4') }, { text: line('a5') });
    const sent = await sendMessage(w.c, { sessionId, text: line('u4') });
    assert.equal(await worker.faultReached('model.after_summary_stored', 60_000), `${sessionId}/4/1`);
    await worker.kill('SIGKILL');
    await w.worker(fake.spec(), { env });
    assert.equal(
      (await waitForTurn(w.c, { sessionId, messageId: sent.messageId, timeoutMs: 60_000 })).state,
      'completed',
    );
    await turn(5);

    const seen = fake.requests.map((r) => r.body.messages.filter((m) => m.role !== 'system'));
    const text = (m: { content?: unknown }) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content));
    // Both summary requests: the four oldest messages, then the instruction; no tools.
    for (const i of [3, 4]) {
      assert.equal(seen[i]!.length, 5);
      assert.match(text(seen[i]!.at(-1)!), /Summarise the conversation above/);
      assert.ok(!fake.requests[i]!.body.tools?.length, 'a summary call offers no tools');
    }
    // Turn 4's model call: the second summary in place of turns 1-2, then turn 3 and the new message.
    assert.equal(seen[5]!.length, 3);
    assert.match(text(seen[5]![0]!), /^\[Summary of the 4 earlier messages[^\n]*\]\nSUMMARY-TWO\n\nu3: /);
    assert.match(text(seen[5]![2]!), /^u4: /);
    // Turn 5 still reads the summary (the session carried it).
    assert.match(text(seen[6]![0]!), /SUMMARY-TWO/);
    assert.equal(seen[6]!.length, 5);

    // The record keeps everything; the session's reference names the summary.
    const transcript = (await sessionStatus(w.c, sessionId)).transcript;
    assert.deepEqual(
      transcript.map((m) => m.content.slice(0, 3)),
      ['u1:', 'a1:', 'u2:', 'a2:', 'u3:', 'a3:', 'u4:', 'a4:', 'u5:', 'a5:'],
    );
    const raw = await w.c.client.workflow.getHandle(sessionWorkflowId(sessionId)).query(sessionStatusQuery);
    assert.equal(raw.context?.summary?.covers, 4);
    await recordHistory(turnWorkflowId(sessionId, 4), 'turn-compaction');
  });
});
