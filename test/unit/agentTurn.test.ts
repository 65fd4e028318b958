import { strict as assert } from 'node:assert';
import { agentTurnProblem } from '../../workflows/child';

// What a turn started from a user's workflow refuses (the user's workflow then fails with BadInput,
// never a workflow task that replays forever).

describe('agentTurnProblem: a turn from your own workflow', () => {
  const ok = { sessionId: 'orders-1', turn: 1, message: 'refund A-17' };
  const cases: [string, unknown, RegExp | undefined][] = [
    ['a plain request', ok, undefined],
    [
      'with history and options',
      { ...ok, history: [{ role: 'user', content: 'hi' }], options: { maxIterations: 30 } },
      undefined,
    ],
    ['no request', undefined, /the request must be/],
    ['a string', 'refund', /the request must be/],
    ['a session ID that poses as a turn', { ...ok, sessionId: 'x-turn-3' }, /ends in '-turn-<digits>'/],
    ['turn 0', { ...ok, turn: 0 }, /invalid turn '0'/],
    ['no message', { ...ok, message: undefined }, /message/],
    ['history not an array', { ...ok, history: 'hi' }, /history must be an array of messages/],
    ['history with a null', { ...ok, history: [null] }, /history must be an array of messages/],
    ['history with a number', { ...ok, history: [3] }, /history must be an array of messages/],
    [
      'a tool call without its result',
      { ...ok, history: [{ role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 't', arguments: {} }] }] },
      /c1/,
    ],
    [
      'maxIterations 0',
      { ...ok, options: { maxIterations: 0 } },
      /options.maxIterations must be a whole number from 1 to 200, got 0/,
    ],
    ['maxIterations over the range', { ...ok, options: { maxIterations: 201 } }, /from 1 to 200, got 201/],
    ['an unknown option', { ...ok, options: { maxIteration: 5 } }, /options.maxIteration is not an option/],
    ['maxIterations a string', { ...ok, options: { maxIterations: '9' } }, /options.maxIterations/],
  ];
  for (const [name, request, want] of cases)
    it(name, () => {
      const problem = agentTurnProblem(request);
      if (want === undefined) assert.equal(problem, undefined);
      else {
        assert.match(problem ?? '', want);
        assert.ok(!problem!.includes('\n'), 'one line');
      }
    });
});
