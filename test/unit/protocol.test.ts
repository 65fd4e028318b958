import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import * as z from 'zod/mini';
import { parseRecovery } from '../../cli/chatView';
import { parseDecision, splitDecisions } from '../../workflows/decisions';
import { activeGrants, addGrant, grantsUpdate, revokeGrant } from '../../workflows/grants';
import { DESCRIPTIONS, describe as describeSchema, RECOVERY_DECISIONS, schemas } from '../../workflows/protocol';
import type { DecisionKind, Grant } from '../../workflows/types';
import { hostileDecision, hostileValue, PROTOTYPE_KEYS } from '../support/hostile';
import * as old from './protocolOracle';
import { samples } from './protocolSamples';

// The schema-derived parsers (workflows/protocol.ts) against the hand-written ones they replaced
// (./protocolOracle.ts, verbatim): same verdict, same reason, same normalized payload, and the
// patched() gates asked in the same situations, for a table of payloads and seeded hostile ones.

const KINDS: DecisionKind[] = ['approve', 'reject', 'recover'];
const S = schemas();
const SEED = 2826;
const base = { toolCallId: 'call_1', by: 'alice' };
const sig = { keyId: 'k1', signedAt: '2026-01-01T00:00:00.000Z', value: 'c2ln' };
const inherited = (proto: object, own: object = {}) => Object.assign(Object.create(proto), own);

/** Payloads that reach every check: each field right, wrong in each way, absent, inherited. */
const table: unknown[] = [
  null,
  undefined,
  0,
  42,
  '',
  'call_1',
  true,
  [],
  [base],
  {},
  base,
  { ...base, decision: 'retry' },
  ...['toolCallId', 'by', 'decisionId', 'reason', 'executionId', 'argsDigest', 'decision', 'result'].flatMap((f) =>
    ([undefined, null, '', ' ', 'x', 'x'.repeat(40), 'x'.repeat(41), 'x'.repeat(200), 'x'.repeat(201)] as unknown[])
      .concat([
        '💥'.repeat(101),
        '💥'.repeat(129),
        '💥'.repeat(1001),
        'x'.repeat(256),
        'x'.repeat(257),
        'r'.repeat(2000),
        'r'.repeat(2001),
        7,
        true,
        {},
        [],
        ['x'],
      ])
      .flatMap((v) => [
        { ...base, [f]: v },
        { ...base, decision: 'succeeded', [f]: v },
      ]),
  ),
  ...['run', 'park'].flatMap((f) =>
    [0, -0, 1, 2, -1, 1.5, 2 ** 53, 2 ** 60, 1e300, NaN, Infinity, -Infinity, '1', null, true].map((v) => ({
      ...base,
      decision: 'retry',
      [f]: v,
    })),
  ),
  ...[true, false, 'true', 0, 1, null].flatMap((v) =>
    RECOVERY_DECISIONS.map((decision) => ({ ...base, decision, skipFence: v })),
  ),
  ...[
    sig,
    { ...sig, extra: 1 },
    { ...sig, signedAt: 'x'.repeat(41) },
    { ...sig, keyId: '' },
    { keyId: 'k1', value: 'v' },
    null,
    'sig',
    [sig],
    inherited(sig),
  ].map((signature) => ({ ...base, decision: 'failed', signature })),
  ...['auto', 'Auto', 'system', 'policy', 'import', 'grant', 'alice'].flatMap((by) => [
    { ...base, by },
    { ...base, by, decision: 'nope' },
    { ...base, by, decisionId: '' },
    { toolCallId: '', by },
  ]),
  { ...base, decision: 'succeeded', result: 'x'.repeat(256 * 1024) },
  { ...base, decision: 'succeeded', result: 'x'.repeat(256 * 1024 - 2) },
  { ...base, decision: 'succeeded', result: '€'.repeat(90_000) },
  { ...base, decision: 'retry', result: 'x'.repeat(300 * 1024), skipFence: true },
  { ...base, decision: 'failed', result: 'x'.repeat(300 * 1024), skipFence: true },
  { ...base, decision: 'succeeded', result: undefined },
  { ...base, decision: 'succeeded', result: () => 1 },
  inherited(base),
  inherited({ ...base, decision: 'retry', result: 'r' }, { reason: 'why' }),
  inherited({ reason: 7 }, base),
  Object.assign(Object.create(null), base, { decision: 'retry' }),
  JSON.parse('{"toolCallId":"c1","by":"alice","__proto__":{"decision":"retry"},"decision":"failed"}'),
  ...PROTOTYPE_KEYS.map((k) => JSON.parse(`{"toolCallId":"c1","by":"alice","decision":"retry","${k}":{"x":1}}`)),
];

const hostile = (kind: DecisionKind, n: number): unknown[] =>
  fc.sample(fc.oneof(hostileDecision(kind, 300), hostileValue(1)), { seed: SEED, numRuns: n });

/** The hand-written parsers with their history gates open, as every turn of baseline 1 has them. */
const ON = (): boolean => true;

describe('protocol: the schema-derived parsers decide as the hand-written ones did', () => {
  for (const kind of KINDS) {
    it(`parseDecision('${kind}'): the table and ${kind === 'recover' ? 3000 : 1500} hostile payloads`, () => {
      for (const raw of [...table, ...hostile(kind, kind === 'recover' ? 3000 : 1500)]) {
        assert.deepStrictEqual(
          parseDecision(kind, raw),
          old.parseDecision(kind, raw, ON, ON),
          `${kind} ${JSON.stringify(raw)?.slice(0, 300)}`,
        );
      }
    });
  }

  it('splitDecisions: envelopes, sizes, kinds', () => {
    const items = (n: number, kind: unknown = 'approve') => Array.from({ length: n }, () => ({ ...base, kind }));
    const cases: unknown[] = [
      ...table,
      ...[0, 1, 2, 99, 100, 101, 150].map((n) => ({ decisions: items(n) })),
      { decisions: [...items(150), null] },
      { decisions: [...items(3), { ...base, kind: 'nope' }, ...items(120)] },
      ...[undefined, null, 'approve', '__proto__', 7, {}, ['approve']].map((kind) => ({ decisions: items(2, kind) })),
      { decisions: [null] },
      { decisions: ['approve'] },
      { decisions: [inherited({ kind: 'recover' })] },
      { decisions: 'x' },
      inherited({ decisions: items(1) }),
      ...fc.sample(hostileValue(1), { seed: SEED, numRuns: 1000 }).map((d) => ({ decisions: [d] })),
      ...fc.sample(hostileValue(1), { seed: SEED, numRuns: 1000 }),
    ];
    for (const raw of cases) {
      const got = splitDecisions(raw);
      assert.deepStrictEqual(got, old.splitDecisions(raw), JSON.stringify(raw)?.slice(0, 300));
      // Each item is the payload as sent, not a copy: it is parsed as its own signal next.
      if (got.ok)
        got.items.forEach((it, i) => assert.equal(it.payload, (raw as { decisions: unknown[] }).decisions[i]));
    }
  });

  const AT = '2026-01-01T00:00:00.000Z';
  const g1: Grant = { id: 'g-1', tool: 'send_email', by: 'bob', at: AT };
  const grantTable: unknown[] = [
    ...table,
    ...['grantId', 'tool', 'by', 'target'].flatMap((f) =>
      [
        undefined,
        null,
        '',
        'x',
        'x'.repeat(100),
        'x'.repeat(101),
        '💥'.repeat(51),
        '💥'.repeat(101),
        'x'.repeat(201),
        7,
        {},
      ].map((v) => ({ grantId: 'g-2', tool: 'send_email', by: 'alice', [f]: v })),
    ),
    ...['auto', 'System', 'alice'].flatMap((by) => [
      { grantId: 'g-1', tool: 't', by },
      { grantId: 'g-1', tool: 't', by, target: '' },
      { grantId: '', tool: 't', by },
      { grantId: 'g-1', by },
    ]),
    { grantId: 'g-1', by: 'carol' },
    { grantId: 'g-9', by: 'carol' },
    inherited({ grantId: 'g-1', tool: 't', by: 'alice' }),
  ];

  it('addGrant and revokeGrant: the table and 2000 hostile payloads, grants new and existing', () => {
    const hostileGrants = fc.sample(
      fc.oneof(
        hostileValue(1),
        fc.record(
          {
            grantId: fc.oneof(fc.constantFrom('g-1', 'g-2'), hostileValue(1)),
            tool: hostileValue(1),
            by: hostileValue(1),
          },
          { requiredKeys: [] },
        ),
      ),
      { seed: SEED, numRuns: 2000 },
    );
    for (const raw of [...grantTable, ...hostileGrants]) {
      for (const grants of [[], [g1], [{ ...g1, revokedAt: AT, revokedBy: 'x' }]]) {
        const msg = JSON.stringify(raw)?.slice(0, 300);
        assert.deepStrictEqual(addGrant(grants, raw, AT), old.addGrant(grants, raw, AT, ON), `grant ${msg}`);
        assert.deepStrictEqual(revokeGrant(grants, raw, AT), old.revokeGrant(grants, raw, AT, ON), `revoke ${msg}`);
      }
    }
  });

  it('grantsUpdate and activeGrants keep the grants as they came, well-formed and active only', () => {
    const lists: unknown[] = [
      ...grantTable,
      [g1, { ...g1, revokedAt: AT }, { ...g1, revokedAt: '' }, { ...g1, target: '' }, { ...g1, extra: 1 }, null, []],
      [inherited(g1), { ...g1, id: 'x'.repeat(101) }, { ...g1, at: 7 }],
      ...fc.sample(fc.array(hostileValue(1)), { seed: SEED, numRuns: 500 }),
    ];
    const updates: unknown[] = [
      ...lists,
      ...lists.map((grants) => ({ version: 1, grants })),
      ...[0, -1, 1.5, 2 ** 60, NaN, Infinity, '1', null, undefined].map((version) => ({ version, grants: [g1] })),
      { version: 2 },
      { version: 2, grants: 'x' },
      inherited({ version: 3, grants: [g1] }),
      ...fc.sample(hostileValue(1), { seed: SEED, numRuns: 500 }),
    ];
    for (const raw of lists) {
      const got = activeGrants(raw);
      assert.deepStrictEqual(got, old.activeGrants(raw));
      got.forEach((g, i) => assert.equal(g, old.activeGrants(raw)[i]));
    }
    // A bare array (the first builds' form) is no longer taken: baseline 1 sends only versioned lists.
    for (const raw of updates)
      assert.deepStrictEqual(
        grantsUpdate(raw),
        Array.isArray(raw) ? undefined : old.grantsUpdate(raw),
        JSON.stringify(raw),
      );
  });
});

describe('protocol: the one difference, which no payload can carry', () => {
  // Temporal's JSON payload converter cannot make an array with named properties: a schema's object
  // refuses arrays, where the old checks read such an array's properties. Stated here so it is known.
  it('an array with named properties is not an object: as a signature, a batch item or a grant', () => {
    const sig = Object.assign([], { keyId: 'k1', signedAt: 'now', value: 'v' });
    const raw = { toolCallId: 'c1', by: 'alice', signature: sig };
    assert.equal(old.parseDecision('approve', raw).ok, true);
    assert.match((parseDecision('approve', raw) as { why: string }).why, /signature must be/);
    const batch = { decisions: [Object.assign([], { kind: 'reject' })] };
    assert.equal(old.splitDecisions(batch).ok, true);
    assert.equal(splitDecisions(batch).ok, true); // the kind is read as before; the item is then refused alone
    const grant = Object.assign([], { id: 'g-1', tool: 't', by: 'bob', at: 'now' });
    assert.deepEqual([old.activeGrants([grant]).length, activeGrants([grant]).length], [1, 0]);
    assert.equal(JSON.stringify(sig), '[]');
  });
});

describe('protocol: the descriptions and choices derive from the schemas', () => {
  it('a payload lists its fields in checking order, optional ones marked, enums with their values', () => {
    assert.equal(
      describeSchema(S.recover),
      '{ toolCallId, by, decisionId?, reason?, executionId?, signature?, decision: retry|succeeded|failed, run?, park?, skipFence?, result? }',
    );
    assert.equal(DESCRIPTIONS.revoke, 'Revoke a standing approval: { grantId, by }');
    assert.equal(DESCRIPTIONS.grant, 'Add a standing approval: { grantId, tool, by, target? }');
    assert.equal(
      DESCRIPTIONS.message,
      'A user message: { text, messageId?, options?, queue? }. While a turn runs it steers that turn (its next model call sees it) unless queue is true',
    );
    assert.ok(
      DESCRIPTIONS.approve.startsWith(
        'Approve a tool call: { toolCallId, by, decisionId?, executionId?, signature?, argsDigest?, arguments? }. ',
      ),
    );
    assert.match(DESCRIPTIONS.decisions, /\{ decisions: \[\{ kind: approve\|reject\|recover, …/);
    assert.match(
      DESCRIPTIONS.grants,
      /\{ version, grants: \[\{ id, tool, target\?, by, at, revokedAt\?, revokedBy\? \}\] \}/,
    );
    for (const [name, d] of Object.entries(DESCRIPTIONS)) assert.doesNotMatch(d, /undefined|\[object/, name);
  });

  it('the chat reads each recovery decision, or its first letter', () => {
    for (const d of RECOVERY_DECISIONS) {
      assert.equal(parseRecovery(d), d);
      assert.equal(parseRecovery(` ${d[0].toUpperCase()} `), d);
    }
    for (const a of ['', 'x', 'retr', 'ok', 'rs']) assert.equal(parseRecovery(a), undefined);
  });
});

describe('protocol: the reference table names every field of every payload', () => {
  const table = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'cli-and-protocol.md'), 'utf8');
  const row = (name: string) => table.split('\n').find((l) => l.startsWith(`| \`${name}\` |`)) ?? '';
  const schemas = {
    approve: z.omit(S.approve, { reason: true }),
    reject: S.reject,
    recover: S.recover,
    message: S.message,
    grant: S.grant,
    revoke: S.revoke,
  };
  for (const [name, schema] of Object.entries(schemas))
    it(name, () => {
      for (const field of Object.keys(schema.shape)) assert.match(row(name), new RegExp(`\\b${field}\\b`), field);
    });
});

describe('protocol: shared by all turns, as the sandbox shares a preloaded module', () => {
  // worker/bundle.ts preloads zod/mini and workflows/protocol; the SDK then deep-freezes what they
  // export (reusable-vm.js deepFreeze, copied here). zod completes a schema on first use, so a schema
  // reachable from the exports would throw in every turn's first parse.
  it('frozen as the SDK freezes them, the parsers decide as before', () => {
    const dist = join(__dirname, '..', '..');
    const script = `
      const deepFreeze = (o, seen = new WeakSet()) => {
        if (o == null || seen.has(o) || (typeof o !== 'object' && typeof o !== 'function')) return o;
        seen.add(o);
        if (Object.isFrozen(o)) return o;
        if (typeof o === 'object')
          for (const k of [...Object.getOwnPropertyNames(o), ...Object.getOwnPropertySymbols(o)]) {
            const v = o[k];
            if (v && (typeof v === 'object' || typeof v === 'function')) try { deepFreeze(v, seen); } catch {}
          }
        return Object.freeze(o);
      };
      deepFreeze(require('zod/mini'));
      deepFreeze(require(${JSON.stringify(join(dist, 'workflows', 'protocol'))}));
      const run = require(${JSON.stringify(join(dist, 'test', 'unit', 'protocolSamples'))}).samples;
      process.stdout.write(JSON.stringify(run()));`;
    const child = spawnSync(process.execPath, ['-e', script], { cwd: dist, encoding: 'utf8', env: { ...process.env } });
    assert.equal(child.stderr, '');
    assert.deepStrictEqual(JSON.parse(child.stdout), JSON.parse(JSON.stringify(samples())));
  });
});
