import { strict as assert } from 'node:assert';
import { argsDigest, canonicalJson, executionIdFor } from '../../workflows/identity';

const HEADER_SAFE = /^[A-Za-z0-9_-]+$/;

describe('identity: executionIdFor', () => {
  it('is deterministic', () => {
    assert.equal(executionIdFor('s1', 1, 'call_1'), executionIdFor('s1', 1, 'call_1'));
  });

  const samples: [string, number, string][] = [
    ['s1', 1, 'call_1'],
    ['', 0, ''],
    ['session with spaces / and ünïcødé ✉', 123456789, 'toolu_01A09q90qw90lq917835lq9'],
    ['x'.repeat(10_000), Number.MAX_SAFE_INTEGER, 'y'.repeat(10_000)],
    ['a|b', -1, 'c\nd'],
  ];
  for (const [s, t, c] of samples) {
    it(`is header safe and ≤ 64 chars for (${JSON.stringify(s.slice(0, 20))}, ${t}, ${JSON.stringify(c.slice(0, 20))})`, () => {
      const id = executionIdFor(s, t, c);
      assert.ok(id.length <= 64, id);
      assert.match(id, HEADER_SAFE);
      assert.match(id, /^owx-[0-9a-f]{32}$/);
    });
  }

  /** Pairs that must get different IDs: each differs in one component, or shifts text across the separators. */
  const distinct: [string, [string, number, string], [string, number, string]][] = [
    ['session differs', ['s1', 1, 'c'], ['s2', 1, 'c']],
    ['turn differs', ['s', 1, 'c'], ['s', 2, 'c']],
    ['toolCallId differs', ['s', 1, 'c1'], ['s', 1, 'c2']],
    ['dash moved between session and call', ['a-b', 1, 'c'], ['a', 1, 'b-c']],
    ['text moved between session and call', ['ab', 1, 'c'], ['a', 1, 'bc']],
    ['digits moved from session into turn', ['s1', 2, 'c'], ['s', 12, 'c']],
    ['digits moved from turn into call', ['s', 12, 'c'], ['s', 1, '2c']],
    ['colon separator ambiguity', ['a:1', 2, 'c'], ['a', 1, '2:c']],
    ['slash separator ambiguity', ['a/1', 1, 'b'], ['a', 1, '1/b']],
    ['underscore ambiguity', ['a_1', 1, 'b'], ['a', 11, 'b']],
    ['empty session vs empty call', ['', 1, 'x'], ['x', 1, '']],
    ['turn 0 vs turn 1', ['s', 0, 'c'], ['s', 1, 'c']],
    ['case differs', ['S', 1, 'c'], ['s', 1, 'c']],
    ['renamed call id', ['s', 1, 'call_0'], ['s', 1, 'call_0#2']],
  ];
  for (const [name, a, b] of distinct) {
    it(`differs: ${name}`, () => assert.notEqual(executionIdFor(...a), executionIdFor(...b)));
  }

  it('has no collisions over a small grid', () => {
    const seen = new Map<string, string>();
    for (const s of ['', 'a', 'a-b', 'b', 'ab'])
      for (const t of [0, 1, 2, 10, 11])
        for (const c of ['', 'b', 'b-c', 'c', '1', 'call_1']) {
          const id = executionIdFor(s, t, c);
          const key = JSON.stringify([s, t, c]);
          assert.equal(seen.get(id), undefined, `${key} collides with ${seen.get(id)}`);
          seen.set(id, key);
        }
    assert.equal(seen.size, 5 * 5 * 6);
  });
});

describe('identity: canonicalJson', () => {
  const cases: { name: string; value: unknown; want: string }[] = [
    { name: 'sorts top-level keys', value: { b: 1, a: 2 }, want: '{"a":2,"b":1}' },
    {
      name: 'sorts nested keys',
      value: { z: { y: 1, x: { d: 1, c: 2 } }, a: null },
      want: '{"a":null,"z":{"x":{"c":2,"d":1},"y":1}}',
    },
    { name: 'keeps array order', value: [3, 1, 2], want: '[3,1,2]' },
    {
      name: 'sorts keys of objects inside arrays',
      value: [
        { b: 1, a: 2 },
        { d: [{ f: 1, e: 2 }], c: 0 },
      ],
      want: '[{"a":2,"b":1},{"c":0,"d":[{"e":2,"f":1}]}]',
    },
    { name: 'string', value: 'hi', want: '"hi"' },
    { name: 'number', value: 1.5, want: '1.5' },
    { name: 'boolean', value: false, want: 'false' },
    { name: 'null', value: null, want: 'null' },
    { name: 'undefined → null', value: undefined, want: 'null' },
    { name: 'drops undefined properties', value: { a: undefined, b: 1 }, want: '{"b":1}' },
    { name: 'empty object', value: {}, want: '{}' },
    { name: 'unicode keys sorted by code unit', value: { é: 1, e: 2, Z: 3 }, want: '{"Z":3,"e":2,"é":1}' },
  ];
  for (const c of cases) it(c.name, () => assert.equal(canonicalJson(c.value), c.want));
});

describe('identity: argsDigest', () => {
  const DIGEST = /^sha256:[0-9a-f]{64}$/;

  const same: [string, unknown, unknown][] = [
    ['key order', { to: 'bob', subject: 'hi', body: 'x' }, { body: 'x', subject: 'hi', to: 'bob' }],
    ['nested key order', { a: { x: 1, y: [1, { q: 1, p: 2 }] }, b: 2 }, { b: 2, a: { y: [1, { p: 2, q: 1 }], x: 1 } }],
    ['undefined property vs absent', { a: 1, b: undefined }, { a: 1 }],
  ];
  for (const [name, a, b] of same) {
    it(`equal for ${name}`, () => {
      assert.equal(argsDigest(a), argsDigest(b));
      assert.match(argsDigest(a), DIGEST);
    });
  }

  const different: [string, unknown, unknown][] = [
    ['different value', { to: 'bob' }, { to: 'eve' }],
    ['different key', { to: 'bob' }, { cc: 'bob' }],
    ['array order', { a: [1, 2] }, { a: [2, 1] }],
    ['number vs string', { n: 1 }, { n: '1' }],
    ['null vs absent', { a: null }, {}],
    ['extra field', { a: 1 }, { a: 1, b: 2 }],
    ['nested value', { a: { b: 1 } }, { a: { b: 2 } }],
  ];
  for (const [name, a, b] of different) {
    it(`different for ${name}`, () => {
      assert.notEqual(argsDigest(a), argsDigest(b));
      assert.match(argsDigest(b), DIGEST);
    });
  }

  it('is the sha256 of the canonical JSON (known vector)', () => {
    // sha256("{}")
    assert.equal(argsDigest({}), 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
  });
});
