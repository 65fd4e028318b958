import { strict as assert } from 'node:assert';
import { afterTurn, createSteeringInbox, messageTurnIn, takeSteers, toSteer } from '../../workflows/steering';
import type { Steer } from '../../workflows/steering';
import { MAX_MESSAGE_BYTES } from '../../workflows/limits';
import { unpairedToolCalls } from '../../workflows/transcript';
import type { Message, QueuedMessage } from '../../workflows/types';

const q = (messageId: string, extra: Partial<QueuedMessage> = {}): QueuedMessage => ({
  text: `text of ${messageId}`,
  messageId,
  ...extra,
});

describe('steering: which queued messages the running turn is given (toSteer)', () => {
  const cases: [string, QueuedMessage[], number, string[]][] = [
    ['nothing queued', [], 1, []],
    ['a new message', [q('a')], 1, ['a']],
    ['already given to this turn: not again', [q('a', { steering: 1 })], 1, []],
    ['given to an earlier turn that ended: given to this one', [q('a', { steering: 1 })], 2, ['a']],
    ['sent with queue: never', [q('a', { queue: true }), q('b')], 1, ['b']],
    ['in arrival order', [q('a'), q('b', { steering: 3 }), q('c')], 3, ['a', 'c']],
  ];
  for (const [name, pending, turn, want] of cases)
    it(name, () =>
      assert.deepEqual(
        toSteer(pending, turn).map((m) => m.messageId),
        want,
      ),
    );
});

describe('steering: the queue after a turn ends (afterTurn)', () => {
  const cases: [string, QueuedMessage[], string[] | undefined, QueuedMessage[]][] = [
    ['the turn took its steering message', [q('a', { steering: 1 })], ['a'], []],
    [
      'the turn ended before its next model call: the message stays, unmarked, for its own turn',
      [q('a', { steering: 1 })],
      undefined,
      [q('a')],
    ],
    [
      'took one of two: the other keeps its place',
      [q('a', { steering: 1 }), q('b', { steering: 1 }), q('c', { queue: true })],
      ['a'],
      [q('b'), q('c', { queue: true })],
    ],
    ['an id the session never queued (a raw client) changes nothing', [q('a')], ['zzz'], [q('a')]],
    ['a turn that failed to report (terminated) took nothing', [q('a', { steering: 1 })], undefined, [q('a')]],
  ];
  for (const [name, pending, steered, want] of cases)
    it(name, () => assert.deepEqual(afterTurn(pending, steered), want));
});

describe('steering: which messages a model call takes (takeSteers)', () => {
  const s = (messageId: string, at: number): Steer => ({ messageId, text: messageId, at });
  const cases: [string, Steer[], number, string[], string[]][] = [
    ['empty', [], 10, [], []],
    ['arrived in an earlier workflow task: taken', [s('a', 7)], 10, ['a'], []],
    ['arrived in the task that starts the call: waits for the next call', [s('a', 10)], 10, [], ['a']],
    ['several, in order', [s('a', 4), s('b', 7), s('c', 10)], 10, ['a', 'b'], ['c']],
  ];
  for (const [name, inbox, now, take, keep] of cases)
    it(name, () => {
      const r = takeSteers(inbox, now);
      assert.deepEqual([r.take.map((x) => x.messageId), r.keep.map((x) => x.messageId)], [take, keep]);
    });
});

describe('steering: the turn inbox', () => {
  const inbox = () => {
    let length = 5;
    const box = createSteeringInbox({ historyLength: () => length });
    return { box, at: (n: number) => (length = n) };
  };

  it('takes each messageId once, after the previous results, and reports what it took', () => {
    const { box, at } = inbox();
    box.receive({ messageId: 'm1', text: 'use the other address' });
    box.receive({ messageId: 'm1', text: 'use the other address' }); // a resend
    at(9);
    const messages: Message[] = [
      { role: 'user', content: 'email bob' },
      { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'lookup', arguments: {} }] },
      { role: 'tool', toolCallId: 'c1', name: 'lookup', content: 'found' },
    ];
    messages.push(...box.take());
    assert.deepEqual(messages[3], { role: 'user', content: 'use the other address' });
    assert.deepEqual(unpairedToolCalls(messages), [], 'pairing intact');
    box.answered();
    assert.deepEqual(box.take(), [], 'taken once');
    box.receive({ messageId: 'm1', text: 'again' });
    at(12);
    assert.deepEqual(box.take(), [], 'a message already taken is not taken again');
    assert.deepEqual(box.steered(), { steered: ['m1'] });
  });

  // Issue #40 hole 3: a message counts as taken only once the model call it was given to answered.
  // Each case: steps of one turn (`m<k>` arrives, `take` before a model call, `answer` when it
  // answered), then what its result says: `steered`, and the user messages left in its output.
  const turns: [string, string[], string[], string[]][] = [
    ['the call answered', ['m1', 'take', 'answer'], ['m1'], ['m1']],
    ['cancelled (or failed) while the call that took it is in flight', ['m1', 'take'], [], []],
    ['the call answered, then a cancel during a tool call', ['m1', 'take', 'answer', 'take'], ['m1'], ['m1']],
    ['arrived after the last model call', ['take', 'answer', 'm1'], [], []],
    ['one answered, the next call never did', ['m1', 'take', 'answer', 'm2', 'take'], ['m1'], ['m1']],
    ['two taken by one call that never answered', ['m1', 'm2', 'take'], [], []],
  ];
  for (const [name, script, steered, kept] of turns)
    it(`what the turn reports: ${name}`, () => {
      const { box, at } = inbox();
      const messages: Message[] = [];
      let length = 5;
      for (const step of script) {
        at((length += 4)); // each step in a workflow task of its own
        if (step === 'take') messages.push(...box.take());
        else if (step === 'answer') box.answered();
        else box.receive({ messageId: step, text: step });
      }
      assert.deepEqual(box.steered(), steered.length ? { steered } : {});
      assert.deepEqual(
        box.withoutUnanswered(messages).map((m) => m.content),
        kept,
      );
    });

  it('a message in the same workflow task as the model call waits for the next call', () => {
    const { box, at } = inbox();
    at(9);
    box.receive({ messageId: 'm1', text: 'hi' });
    assert.deepEqual(box.take(), []);
    assert.deepEqual(box.steered(), {}, 'a turn that ends now took nothing: the session runs it as a turn');
    at(13);
    assert.deepEqual(box.take(), [{ role: 'user', content: 'hi' }]);
  });

  it('drops malformed and oversized payloads without throwing', () => {
    const { box, at } = inbox();
    for (const raw of [
      undefined,
      null,
      'text',
      { text: 'no id' },
      { messageId: 'x' },
      { messageId: 'e', text: '   ' },
      { messageId: 'big', text: 'x'.repeat(MAX_MESSAGE_BYTES + 1) },
    ])
      box.receive(raw);
    at(20);
    assert.deepEqual(box.take(), []);
  });
});

describe('messageTurnIn: what became of one message', () => {
  const turns = [
    { n: 1, workflowId: 'w1', messageId: 'm1', state: 'completed' as const, steered: ['m2'] },
    { n: 2, workflowId: 'w2', messageId: 'm3', state: 'running' as const },
  ];
  const pending = [
    { text: 'x', messageId: 'm4', steering: 2 },
    { text: 'y', messageId: 'm5' },
  ];
  const refused = [{ at: 't', messageId: 'm6', reason: 'empty' }];
  const cases: [string, string, object][] = [
    ['the turn it started', 'm3', { turn: turns[1], queued: false }],
    ['the turn that took it as steering', 'm2', { turn: turns[0], queued: false }],
    ['given to the running turn', 'm4', { queued: true, steering: 2 }],
    ['waiting', 'm5', { queued: true }],
    ['refused', 'm6', { refused: refused[0], queued: false }],
    ['unknown', 'm7', { queued: false }],
  ];
  for (const [name, id, want] of cases)
    it(name, () => assert.deepEqual(messageTurnIn({ turns, pending, refused }, id), want));
});
