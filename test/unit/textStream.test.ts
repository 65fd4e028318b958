import { strict as assert } from 'node:assert';
import type { StreamCursor, StreamSnapshot } from '../../runtime/textStream';
import { STREAM_WINDOW_CHARS, nextDelta, snapshotOf, streamOf } from '../../runtime/textStream';
import { answerRest } from '../../cli/chatStream';
import { demoModel } from '../../activities/models/demo';

const snap = (text: string, over: Partial<StreamSnapshot> = {}): StreamSnapshot => ({
  iteration: 1,
  text,
  offset: 0,
  seq: 1,
  ...over,
});
const at = (length: number, over: Partial<StreamCursor> = {}): StreamCursor => ({
  iteration: 1,
  length,
  seq: 1,
  ...over,
});

describe('streaming: snapshots of a model call’s text and the deltas readers show', () => {
  const cases: {
    name: string;
    cursor?: StreamCursor;
    s: StreamSnapshot;
    delta: string;
    restart?: boolean;
    gap?: boolean;
  }[] = [
    { name: 'the first snapshot: all of it', s: snap('Hello'), delta: 'Hello' },
    { name: 'more text: only what is new', cursor: at(5), s: snap('Hello world', { seq: 2 }), delta: ' world' },
    { name: 'the same snapshot again: nothing', cursor: at(5), s: snap('Hello'), delta: '' },
    {
      name: 'a window past the cap: what is new, from inside the window',
      cursor: at(10),
      s: snap('56789abc', { offset: 5, seq: 3 }),
      delta: 'abc',
    },
    {
      name: 'a window that starts after what was seen: a gap, then the window',
      cursor: at(3),
      s: snap('789abc', { offset: 7, seq: 9 }),
      delta: '789abc',
      gap: true,
    },
    {
      name: 'the next model call (another iteration): a restart',
      cursor: at(11),
      s: snap('Next', { iteration: 2 }),
      delta: 'Next',
      restart: true,
    },
    {
      name: 'a retried attempt, shorter than what was seen: a restart',
      cursor: at(11, { seq: 4 }),
      s: snap('Hel', { seq: 1 }),
      delta: 'Hel',
      restart: true,
    },
    {
      name: 'a retried attempt already longer than what was seen (lower seq): a restart',
      cursor: at(3, { seq: 7 }),
      s: snap('Hello again', { seq: 2 }),
      delta: 'Hello again',
      restart: true,
    },
    {
      name: 'another attempt, even one already past what was seen: a restart',
      cursor: at(3, { attempt: 1 }),
      s: snap('Hello again', { seq: 9, attempt: 2 }),
      delta: 'Hello again',
      restart: true,
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const step = nextDelta(c.cursor, c.s);
      assert.equal(step.delta, c.delta);
      assert.equal(step.restart, c.restart ?? false);
      assert.equal(step.gap, c.gap ?? false);
      assert.deepEqual(step.cursor, {
        iteration: c.s.iteration,
        length: c.s.offset + c.s.text.length,
        seq: c.s.seq,
        ...(c.s.attempt !== undefined ? { attempt: c.s.attempt } : {}),
      });
    });

  it('successive snapshots rebuild the whole text, also past the window', () => {
    const full = Array.from({ length: 300 }, (_, i) => `word${i} `).join('');
    let shown = '';
    let cursor: StreamCursor | undefined;
    for (let end = 7, seq = 1; end <= full.length + 40; end += 37, seq++) {
      const step = nextDelta(cursor, snapshotOf(1, full.slice(0, end), seq, false, 100));
      assert.equal(step.gap, false);
      shown += step.delta;
      cursor = step.cursor;
    }
    assert.equal(shown, full);
  });

  it('a snapshot holds at most the window: the end of the text, and where it starts', () => {
    const s = snapshotOf(3, 'x'.repeat(STREAM_WINDOW_CHARS + 10) + 'END', 5, true);
    assert.equal(s.text.length, STREAM_WINDOW_CHARS);
    assert.ok(s.text.endsWith('END'));
    assert.equal(s.offset, 13);
    assert.equal(s.done, true);
    assert.deepEqual(snapshotOf(1, 'hi', 1), { iteration: 1, text: 'hi', offset: 0, seq: 1 });
  });

  it('only a well-formed `stream` in a heartbeat is a snapshot (a tool’s heartbeat is not)', () => {
    assert.deepEqual(streamOf({ stream: snap('a') }), snap('a'));
    for (const h of [
      undefined,
      null,
      'x',
      { attempt: 1, phase: 'starting' },
      { stream: { text: 1 } },
      { stream: snap('a', { offset: -1 }) },
    ])
      assert.equal(streamOf(h), undefined, JSON.stringify(h));
  });

  it('chat prints only the rest of an answer it streamed, and the whole answer otherwise', () => {
    assert.equal(answerRest('Hello wo', 'Hello world'), 'rld');
    assert.equal(answerRest('Hello world', 'Hello world'), '');
    assert.equal(answerRest(undefined, 'Hello'), undefined);
    assert.equal(answerRest('', 'Hello'), undefined);
    assert.equal(answerRest('Goodbye', 'Hello'), undefined, 'not the start of the answer: print it whole');
  });

  it('the demo model streams its answer a word at a time, and the pieces make the answer', async () => {
    const pieces: string[] = [];
    const r = await demoModel(0).generate(
      { sessionId: 's', turn: 1, iteration: 1, messages: [{ role: 'user', content: 'hi' }], tools: [] },
      { signal: new AbortController().signal, onText: (d) => pieces.push(d) },
    );
    assert.ok(pieces.length > 5);
    assert.equal(pieces.join(''), r.text);
  });
});
