import fc from 'fast-check';

// Arbitraries for hostile input: what any Temporal client (signals) or a prompt-injected model
// (tool calls) may send. Shared by the pure fuzz tier and the end-to-end one.

/** Keys that reach Object.prototype or shadow its members when code indexes objects carelessly. */
export const PROTOTYPE_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__defineGetter__',
  'isPrototypeOf',
];

const weirdString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }), // lone surrogates, control characters
  fc.constantFrom(
    ...PROTOTYPE_KEYS,
    '',
    ' ',
    '\n',
    '\u0000',
    'c1',
    'a'.repeat(257),
    'line\nbreak',
    '💥'.repeat(70),
    'null',
    'undefined',
    '{"toolCallId":"c1"}',
  ),
);

/** A long string; `maxKiB` keeps the end-to-end tier's history small. */
export const hugeString = (maxKiB: number) => fc.integer({ min: 1, max: maxKiB }).map((k) => 'x'.repeat(k * 1024));

/** JSON-ish values with prototype keys, unicode and wrong types at every level. */
export const hostileValue = (maxKiB = 4): fc.Arbitrary<unknown> =>
  fc.letrec<{ value: unknown }>((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      weirdString,
      fc.integer(),
      fc.double(),
      fc.boolean(),
      fc.constant(null),
      hugeString(maxKiB),
      fc.array(tie('value'), { maxLength: 4 }),
      fc.dictionary(fc.oneof(weirdString, fc.constantFrom(...PROTOTYPE_KEYS)), tie('value'), { maxKeys: 4 }),
    ),
  })).value;

/** Mostly `likely`, sometimes anything: near-misses reach the checks behind the parser. */
const mostly = <T>(likely: fc.Arbitrary<T>, other: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 4, arbitrary: likely }, { weight: 1, arbitrary: other });

/** Decision payloads: near-misses of valid ones (right keys, some wrong values) and junk. */
export const hostileDecision = (kind: 'approve' | 'reject' | 'recover', maxKiB = 4): fc.Arbitrary<unknown> =>
  fc.oneof(
    { weight: 1, arbitrary: hostileValue(maxKiB) },
    {
      weight: 3,
      // The three fields every decision needs, mostly right, plus a few optional ones that may be wrong.
      arbitrary: fc
        .tuple(
          fc.record({
            kind: mostly(fc.constant(kind), fc.constantFrom('approve', 'reject', 'recover', '__proto__')),
            toolCallId: mostly(fc.constantFrom('c1', 'c2'), fc.oneof(weirdString, hostileValue(1))),
            by: mostly(fc.constantFrom('alice', 'mallory'), fc.oneof(weirdString, hostileValue(1))),
          }),
          fc.record(
            {
              decision: mostly(fc.constantFrom('retry', 'succeeded', 'failed'), weirdString),
              executionId: fc.oneof(weirdString, hostileValue(1)),
              argsDigest: fc.oneof(weirdString, hostileValue(1)),
              run: fc.oneof(fc.integer(), fc.double(), weirdString),
              park: fc.oneof(fc.integer(), fc.double(), weirdString),
              reason: fc.oneof(weirdString, hugeString(maxKiB)),
              result: hostileValue(maxKiB),
              signature: fc.oneof(
                hostileValue(1),
                fc.record({
                  keyId: mostly(fc.stringMatching(/^ed25519:[0-9a-f]{16}$/), weirdString),
                  signedAt: mostly(
                    fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
                    weirdString,
                  ),
                  value: mostly(fc.base64String({ minLength: 88, maxLength: 88 }), weirdString),
                }),
              ),
              __proto__: hostileValue(1),
              constructor: hostileValue(1),
            },
            { requiredKeys: [] },
          ),
          fc.shuffledSubarray(
            [
              'decision',
              'executionId',
              'argsDigest',
              'run',
              'park',
              'reason',
              'result',
              'signature',
              'signature',
              '__proto__',
              'constructor',
            ],
            { maxLength: 3 },
          ),
        )
        .map(([base, extra, keep]) => ({
          ...base,
          ...Object.fromEntries(Object.entries(extra).filter(([k]) => keep.includes(k))),
        })),
    },
  );

/** A tool call as a provider might hand it over: names that collide with built-ins, malformed or huge arguments. */
export const hostileToolCall = (toolNames: readonly string[], maxKiB = 4): fc.Arbitrary<unknown> =>
  fc.oneof(
    hostileValue(1),
    fc.record(
      {
        id: fc.oneof(fc.constantFrom('c1', 'c1', ''), weirdString, hostileValue(1)),
        name: fc.oneof(fc.constantFrom(...toolNames, ...PROTOTYPE_KEYS), weirdString, hostileValue(1)),
        arguments: fc.oneof(
          hostileValue(maxKiB),
          weirdString,
          fc.constantFrom('{', '{"to": ', '[]', 'null', '"str"', '{"__proto__": {"polluted": true}}'),
        ),
      },
      { requiredKeys: [] },
    ),
  );
