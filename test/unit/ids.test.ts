import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import {
  parseWorkflowId,
  sessionIdProblem,
  sessionStartProblem,
  sessionWorkflowId,
  turnOf,
  turnProblem,
  turnWorkflowId,
} from '../../workflows/ids';

// The workflow-ID scheme (workflows/ids.ts) must be injective over every id the boundary accepts:
// no session's ID is another session's or a turn's, no two turns share one, and the parser is the
// builders' inverse. Adversarial ids are built from the pieces that make concatenation collide.

const SEED = Number(process.env.FUZZ_SEED ?? 2727);
const opts = { seed: SEED, numRuns: 3000 };

const PIECES = ['x', 'a', 'T', 'turn', '-turn-', '-', '.', ':', '_', '0', '1', '01', '12', '9', 'session-'];
const rawId = fc.array(fc.constantFrom(...PIECES), { minLength: 1, maxLength: 8 }).map((p) => p.join(''));
const accepted = rawId.filter((s) => sessionIdProblem(s) === undefined);
const turnN = fc.oneof(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }));
/** A second id close to the first: the first with a turn-like tail, or a prefix of it. */
const near = (s: string) =>
  fc.oneof(
    accepted,
    fc.constant(s),
    turnN.map((n) => `${s}-turn-${n}`),
    fc.nat({ max: s.length }).map((k) => s.slice(0, Math.max(1, k))),
  );
const pair = accepted.chain((s1) => near(s1).map((s2) => [s1, s2] as const));

describe('workflow IDs (workflows/ids.ts)', () => {
  it('two different accepted sessions never share a session workflow ID', () => {
    fc.assert(
      fc.property(pair, ([s1, s2]) => {
        fc.pre(sessionIdProblem(s2) === undefined && s1 !== s2);
        assert.notEqual(sessionWorkflowId(s1), sessionWorkflowId(s2));
      }),
      opts,
    );
  });

  it("no accepted session's workflow ID is any accepted session's turn ID (itself included)", () => {
    fc.assert(
      fc.property(pair, turnN, ([s1, s2], n) => {
        fc.pre(sessionIdProblem(s2) === undefined);
        assert.notEqual(sessionWorkflowId(s1), turnWorkflowId(s2, n));
        assert.notEqual(sessionWorkflowId(s2), turnWorkflowId(s1, n));
      }),
      opts,
    );
  });

  it('two turns share an ID only when session and number are equal', () => {
    fc.assert(
      fc.property(pair, turnN, turnN, ([s1, s2], n1, n2) => {
        fc.pre(sessionIdProblem(s2) === undefined);
        const same = turnWorkflowId(s1, n1) === turnWorkflowId(s2, n2);
        assert.equal(same, s1 === s2 && n1 === n2);
      }),
      opts,
    );
  });

  it('parse(build(x)) = x for sessions and turns', () => {
    fc.assert(
      fc.property(accepted, turnN, (s, n) => {
        assert.deepEqual(parseWorkflowId(sessionWorkflowId(s)), { kind: 'session', sessionId: s });
        assert.deepEqual(parseWorkflowId(turnWorkflowId(s, n)), { kind: 'turn', sessionId: s, turn: n });
        assert.equal(turnOf(turnWorkflowId(s, n)), n);
        assert.equal(turnOf(sessionWorkflowId(s)), undefined);
      }),
      opts,
    );
  });

  it('the parser accepts only what the builders build: build(parse(id)) = id', () => {
    const anyId = fc.oneof(
      rawId.map((s) => `session-${s}`),
      rawId,
      fc.string({ maxLength: 40 }).map((s) => `session-${s}`),
    );
    fc.assert(
      fc.property(anyId, (id) => {
        const p = parseWorkflowId(id);
        if (!p) return;
        assert.equal(p.kind === 'turn' ? turnWorkflowId(p.sessionId, p.turn) : sessionWorkflowId(p.sessionId), id);
      }),
      opts,
    );
  });

  it('the IDs of accepted sessions are the ones every earlier build made (no migration)', () => {
    fc.assert(
      fc.property(accepted, turnN, (s, n) => {
        assert.equal(sessionWorkflowId(s), `session-${s}`);
        assert.equal(turnWorkflowId(s, n), `session-${s}-turn-${n}`);
      }),
      opts,
    );
  });

  it('each id refused for its ending would have taken a real turn ID', () => {
    fc.assert(
      fc.property(accepted, turnN, (s, n) => {
        const bad = `${s}-turn-${n}`;
        fc.pre(bad.length <= 100);
        assert.match(sessionIdProblem(bad) ?? '', /ends in '-turn-<digits>'/);
        assert.equal(sessionWorkflowId(bad), turnWorkflowId(s, n), 'the collision the rule prevents');
      }),
      opts,
    );
  });

  const table: [string, unknown, RegExp | undefined][] = [
    ['a plain id', 'x', undefined],
    ['an id with every allowed character', 'Ab9._:-z', undefined],
    ['turn in the middle', 'x-turn-1-b', undefined],
    ['a turn word without digits', 'x-turn-', undefined],
    ['digits without the dash', 'x-turn1', undefined],
    ['another case', 'x-TURN-1', undefined],
    ['a turn suffix', 'x-turn-1', /ends in '-turn-<digits>'.*e\.g\. 'x-turn1'/],
    ['a turn suffix with a leading zero', 'x-turn-01', /ends in '-turn-<digits>'/],
    ['a turn suffix of zero', 'x-turn-0', /ends in '-turn-<digits>'/],
    ['nested turn suffixes', 'x-turn-1-turn-22', /ends in '-turn-<digits>'/],
    ['empty', '', /use 1-100 letters/],
    ['a leading dash', '-x', /use 1-100 letters/],
    ['a slash', 'a/b', /use 1-100 letters/],
    ['a space', 'a b', /use 1-100 letters/],
    ['101 characters', 'a'.repeat(101), /use 1-100 letters/],
    ['not a string', 7, /use 1-100 letters/],
  ];
  for (const [name, id, want] of table)
    it(`session id: ${name}`, () => {
      const p = sessionIdProblem(id);
      if (want) assert.match(p ?? '', want);
      else assert.equal(p, undefined);
    });

  it('turn numbers: positive safe integers only', () => {
    for (const ok of [1, 2, 99, Number.MAX_SAFE_INTEGER]) assert.equal(turnProblem(ok), undefined);
    for (const bad of [0, -1, 1.5, NaN, Infinity, 2 ** 60, '1', undefined])
      assert.match(turnProblem(bad) ?? '', /turns are numbered 1, 2, 3/);
  });

  it('parses leave foreign, non-canonical and refused IDs alone', () => {
    for (const id of ['x', 'session-', 'session-x-turn-01', 'session-x-turn-0', 'session--x', 'probe-1', 'session-a b'])
      assert.equal(parseWorkflowId(id), undefined, id);
    // A session id refused for its ending, started by an older build: its turns are nobody's now.
    assert.equal(parseWorkflowId('session-x-turn-1-turn-2'), undefined);
    assert.deepEqual(parseWorkflowId('session-x-turn-1'), { kind: 'turn', sessionId: 'x', turn: 1 });
  });

  it("a session workflow's start: its ID must be session-<its id>", () => {
    assert.equal(sessionStartProblem('session-x', 'x'), undefined);
    assert.match(sessionStartProblem('session-x-turn-1', 'x-turn-1') ?? '', /ends in '-turn-<digits>'/);
    assert.match(sessionStartProblem('foo', 'x') ?? '', /must run as workflow session-x, not foo/);
    assert.match(sessionStartProblem('session-x', undefined) ?? '', /invalid session id 'undefined'/);
  });
});
