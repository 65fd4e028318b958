import { strict as assert } from 'node:assert';
import { PassThrough } from 'node:stream';
import { runChat } from '../cli/chat';
import { showSession } from '../client/inspect';
import { sendMessage } from '../client/session';
import type { TextEvent, TurnText } from '../client/stream';
import { approvalsApp } from '../apps/approvals/app';
import { streamTurn } from '../client/stream';
import { useFakeModelServer } from './support/fakeModelServer';
import { eventually, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Streaming (docs/chat-and-webui.md): a real worker streams from an OpenAI-protocol server that sends
// the first word and then holds the rest; the library's iterator, the approvals API and chat see that word while the
// model call is still open, and the transcript still gets the whole message.

const ANSWER = 'Streaming reaches you while the model still writes, and the transcript keeps it whole.';

describe('streaming a model call’s text to readers while it is generated', function () {
  this.timeout(60_000);
  const w = useWorld();
  const fake = useFakeModelServer('file');

  const held = () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    return { gate, release };
  };

  it('streamTurn yields text before the model call completes; the transcript has the whole message', async () => {
    await w.worker(fake.spec());
    const { gate, release } = held();
    fake.enqueue({ text: ANSWER, gate });
    const sessionId = uniq('stream');
    const sent = await sendMessage(w.c, { sessionId, text: 'tell me' });
    const events: TextEvent[] = [];
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), 30_000);
    try {
      for await (const e of streamTurn(w.c, { sessionId, messageId: sent.messageId, signal: stop.signal })) {
        events.push(e);
        // The provider has sent one word and holds the rest: this text came through while the call runs.
        if (events.length === 1) {
          assert.equal(e.text, 'Streaming ');
          assert.equal(e.iteration, 1);
          assert.equal(fake.requests[0]!.body.stream, true, 'the provider was asked to stream');
          // The approvals page's JSON API has the same text (the call page polls it).
          const app = approvalsApp({ client: w.c, trustHeader: 'x-user' });
          const res = await app.request(`/api/turns/${sessionId}/1/text`, { headers: { 'x-user': 'alice' } });
          const body = (await res.json()) as TurnText;
          assert.equal(body.running?.text, 'Streaming ', JSON.stringify(body));
          assert.equal(body.closed, false);
          release();
        }
      }
    } finally {
      clearTimeout(timer);
      release();
    }
    assert.ok(events.length >= 1, 'no text streamed before the model call completed');
    assert.ok(ANSWER.startsWith(events.at(-1)!.text), JSON.stringify(events));
    const done = await turnClosed(w.c, { workflowId: events[0]!.workflowId });
    assert.equal(done.text, ANSWER);
    const view = await showSession(w.c, sessionId);
    assert.deepEqual(
      view.transcript.filter((m) => m.role === 'assistant').map((m) => m.content),
      [ANSWER],
      'the durable transcript holds the whole message',
    );
  });

  it('chat prints the text as it comes, then the rest of the answer, once', async () => {
    await w.worker(fake.spec());
    const { gate, release } = held();
    fake.enqueue({ text: ANSWER, gate });
    const input = new PassThrough();
    const output = new PassThrough();
    let screen = '';
    output.on('data', (d: Buffer) => (screen += d.toString()));
    const chat = runChat(w.c, { sessionId: uniq('stream-chat'), by: 'alice', input, output, pollMs: 100 });
    try {
      input.write('tell me\n');
      await eventually(async () => screen.includes('assistant: Streaming '), 'chat shows the first word', 20_000);
      assert.ok(!screen.includes('keeps it whole'), 'the rest is still held by the provider');
      release();
      await eventually(async () => screen.includes(`assistant: ${ANSWER}\n`), 'chat shows the answer', 20_000);
      assert.equal(screen.split('transcript keeps it whole').length, 2, `the answer shown once:\n${screen}`);
    } finally {
      release();
      input.end();
      await chat;
    }
  });
});
