import { strict as assert } from 'node:assert';
import {
  DEFAULT_MAX_ITERATIONS,
  capReached,
  iterationCap,
  mergeTurnOptions,
  turnOptionsArg,
  turnOptionsProblem,
} from '../../workflows/turnOptions';
import type { TurnOptions } from '../../workflows/types';

// The limits a user sets for a turn: one range check shared by the library, the CLI, the session
// (a raw `message` signal) and startAgentTurn; the merge of a turn's options over the session's; and
// the default cap, which old turns replay at 12.

describe('turnOptionsProblem: what a turn may be given', () => {
  const cases: [string, unknown, RegExp | undefined][] = [
    ['none', undefined, undefined],
    ['empty', {}, undefined],
    ['the smallest cap', { maxIterations: 1 }, undefined],
    ['the largest cap', { maxIterations: 200 }, undefined],
    ['an explicit undefined', { maxIterations: undefined }, undefined],
    ['zero', { maxIterations: 0 }, /^options.maxIterations must be a whole number from 1 to 200, got 0$/],
    ['negative', { maxIterations: -3 }, /from 1 to 200, got -3$/],
    ['over the range', { maxIterations: 201 }, /from 1 to 200, got 201$/],
    ['a fraction', { maxIterations: 2.5 }, /got 2.5$/],
    ['NaN', { maxIterations: NaN }, /got NaN$/],
    ['Infinity', { maxIterations: Infinity }, /got Infinity$/],
    ['a numeric string', { maxIterations: '9' }, /got '9'$/],
    ['null', { maxIterations: null }, /got null$/],
    ['an object', { maxIterations: { n: 3 } }, /got object$/],
    [
      'a misspelt option',
      { maxIteration: 5 },
      /^options.maxIteration is not an option; the options are: maxIterations$/,
    ],
    ['options null', null, /^options must be an object such as \{ maxIterations: 40 \}, got null$/],
    ['options a number', 40, /^options must be an object/],
    ['options an array', [40], /^options must be an object/],
    ['a long unknown name is cut', { ['x'.repeat(500)]: 1 }, /^options.x{40} is not an option/],
  ];
  for (const [name, raw, want] of cases)
    it(name, () => {
      const problem = turnOptionsProblem(raw);
      if (want === undefined) assert.equal(problem, undefined);
      else {
        assert.match(problem ?? '', want);
        assert.ok(!problem!.includes('\n'), 'one line');
      }
    });
});

describe("mergeTurnOptions and turnOptionsArg: a turn's options over the session's", () => {
  const cases: [string, TurnOptions | undefined, TurnOptions | undefined, { options?: TurnOptions }][] = [
    // The turn's input stays as the session always built it when a message brings no options.
    ['neither', undefined, undefined, {}],
    ['the session only', { maxIterations: 5 }, undefined, { options: { maxIterations: 5 } }],
    ['an empty session object stays as it was', {}, undefined, { options: {} }],
    ['the turn only', undefined, { maxIterations: 7 }, { options: { maxIterations: 7 } }],
    ['the turn wins', { maxIterations: 5 }, { maxIterations: 7 }, { options: { maxIterations: 7 } }],
    [
      'an unset turn option keeps the session one',
      { maxIterations: 5 },
      { maxIterations: undefined },
      { options: { maxIterations: 5 } },
    ],
    ['empty turn options over none', undefined, {}, {}],
  ];
  for (const [name, session, turn, want] of cases)
    it(name, () => assert.deepEqual(turnOptionsArg(session, turn), want));
  it('merging does not touch its inputs', () => {
    const session = { maxIterations: 5 };
    mergeTurnOptions(session, { maxIterations: 9 });
    assert.deepEqual(session, { maxIterations: 5 });
  });
});

describe('iterationCap: the cap of a turn', () => {
  it('an explicit cap wins; else the default, 40', () => {
    assert.equal(iterationCap({ maxIterations: 3 }), 3);
    assert.equal(iterationCap({ maxIterations: 200 }), 200);
    assert.equal(iterationCap(undefined), DEFAULT_MAX_ITERATIONS);
    assert.equal(iterationCap({}), 40);
  });
  it('the cap error says how to raise it, on one line', () => {
    assert.equal(
      capReached(2),
      'iteration cap (2) reached; raise it with the `maxIterations` option (at most 200), or start a new turn to continue',
    );
  });
});
