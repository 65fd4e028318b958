import { strict as assert } from 'node:assert';
import type { Decision } from '../../workflows/decisions';
import { parseDecision, splitDecisions } from '../../workflows/decisions';
import type { DecisionKind } from '../../workflows/types';
import { DECISION_IDS as base, DIGEST } from './helpers';

// How decisions are judged against the ledger is in test/unit/judgeDecision.test.ts.

const KINDS: DecisionKind[] = ['approve', 'reject', 'recover'];

describe('decisions: parseDecision rejects malformed payloads', () => {
  const malformed: { name: string; raw: unknown; kinds?: DecisionKind[]; why?: RegExp }[] = [
    { name: 'null', raw: null, why: /payload must be an object/ },
    { name: 'undefined', raw: undefined, why: /payload must be an object/ },
    { name: 'array', raw: [base], why: /payload must be an object/ },
    { name: 'string', raw: 'call_1', why: /payload must be an object/ },
    { name: 'number', raw: 42, why: /payload must be an object/ },
    { name: 'missing toolCallId', raw: { by: 'alice' }, why: /toolCallId/ },
    { name: 'empty toolCallId', raw: { ...base, toolCallId: '' }, why: /toolCallId/ },
    { name: 'numeric toolCallId', raw: { ...base, toolCallId: 1 }, why: /toolCallId/ },
    { name: 'toolCallId too long', raw: { ...base, toolCallId: 'x'.repeat(257) }, why: /toolCallId/ },
    { name: 'missing by', raw: { toolCallId: 'call_1' }, why: /by must/ },
    { name: 'empty by', raw: { ...base, by: '' }, why: /by must/ },
    { name: 'by too long', raw: { ...base, by: 'b'.repeat(201) }, why: /by must/ },
    { name: 'by is an object', raw: { ...base, by: { name: 'x' } }, why: /by must/ },
    { name: 'decisionId empty', raw: { ...base, decisionId: '' }, why: /decisionId/ },
    { name: 'decisionId number', raw: { ...base, decisionId: 5 }, why: /decisionId/ },
    { name: 'decisionId null', raw: { ...base, decisionId: null }, why: /decisionId/ },
    { name: 'decisionId too long', raw: { ...base, decisionId: 'd'.repeat(257) }, why: /decisionId/ },
    { name: 'reason not a string', raw: { ...base, reason: 7 }, why: /reason/ },
    { name: 'reason too long', raw: { ...base, reason: 'r'.repeat(2001) }, why: /reason/ },
    { name: 'argsDigest number', raw: { ...base, argsDigest: 1 }, kinds: ['approve'], why: /argsDigest/ },
    { name: 'argsDigest empty', raw: { ...base, argsDigest: '' }, kinds: ['approve'], why: /argsDigest/ },
    { name: 'argsDigest null', raw: { ...base, argsDigest: null }, kinds: ['approve'], why: /argsDigest/ },
    {
      name: 'recover without decision',
      raw: base,
      kinds: ['recover'],
      why: /decision must be one of retry, succeeded, failed/,
    },
    {
      name: 'recover with bad decision',
      raw: { ...base, decision: 'ignore' },
      kinds: ['recover'],
      why: /decision must be one of/,
    },
    {
      name: 'recover with park 0',
      raw: { ...base, decision: 'retry', park: 0 },
      kinds: ['recover'],
      why: /park must be a positive integer/,
    },
    {
      name: 'recover with skipFence not a boolean',
      raw: { ...base, decision: 'retry', skipFence: 'yes' },
      kinds: ['recover'],
      why: /skipFence must be true or false/,
    },
    {
      name: 'recover succeeded with skipFence',
      raw: { ...base, decision: 'succeeded', skipFence: true },
      kinds: ['recover'],
      why: /skipFence only goes with decision retry/,
    },
    {
      name: 'recover with decision "toString"',
      raw: { ...base, decision: 'toString' },
      kinds: ['recover'],
      why: /decision must be one of/,
    },
    {
      name: 'signature not an object',
      raw: { ...base, signature: 'sig' },
      why: /signature must be \{ keyId, signedAt, value \}/,
    },
    {
      name: 'signature missing its value',
      raw: { ...base, signature: { keyId: 'k', signedAt: 't' } },
      why: /signature must be/,
    },
    {
      name: 'recover with a result over 256 KiB',
      raw: { ...base, decision: 'succeeded', result: { log: 'x'.repeat(262_144) } },
      kinds: ['recover'],
      why: /result is 262154 bytes; at most 262144: give a summary/,
    },
  ];
  for (const c of malformed) {
    for (const kind of c.kinds ?? KINDS) {
      it(`${kind}: ${c.name}`, () => {
        const parsed = parseDecision(kind, c.raw);
        assert.equal(parsed.ok, false);
        if (parsed.ok) return;
        assert.ok(parsed.why.startsWith(`malformed ${kind}:`), parsed.why);
        if (c.why) assert.match(parsed.why, c.why);
      });
    }
  }

  it('a rejected payload still reports the ids it could read', () => {
    const parsed = parseDecision('recover', { toolCallId: 'c9', by: 'ann', decisionId: 'd1', decision: 'nope' });
    assert.deepEqual(parsed, {
      ok: false,
      why: parsed.ok ? '' : parsed.why,
      toolCallId: 'c9',
      by: 'ann',
      decisionId: 'd1',
    });
  });
});

describe('decisions: parseDecision and prototype pollution', () => {
  const hostile: { name: string; json: string; kind: DecisionKind; ok: boolean }[] = [
    {
      name: '__proto__ object',
      json: '{"toolCallId":"c","by":"x","__proto__":{"polluted":true}}',
      kind: 'approve',
      ok: true,
    },
    {
      name: '__proto__ carrying ids only',
      json: '{"__proto__":{"toolCallId":"c","by":"x"}}',
      kind: 'approve',
      ok: false,
    },
    {
      name: '__proto__ carrying a decision',
      json: '{"toolCallId":"c","by":"x","__proto__":{"decision":"retry"}}',
      kind: 'recover',
      ok: false,
    },
    {
      name: 'constructor.prototype',
      json: '{"toolCallId":"c","by":"x","constructor":{"prototype":{"polluted":true}}}',
      kind: 'reject',
      ok: true,
    },
    {
      name: 'constructor as id',
      json: '{"toolCallId":"constructor","by":"__proto__","decision":"retry"}',
      kind: 'recover',
      ok: true,
    },
    {
      name: '__proto__ as result',
      json: '{"toolCallId":"c","by":"x","decision":"succeeded","result":{"__proto__":{"polluted":true}}}',
      kind: 'recover',
      ok: true,
    },
  ];
  for (const c of hostile) {
    it(`${c.kind}: ${c.name} does not throw or pollute`, () => {
      const parsed = parseDecision(c.kind, JSON.parse(c.json));
      assert.equal(parsed.ok, c.ok, JSON.stringify(parsed));
      if (!parsed.ok) assert.ok(parsed.why.startsWith(`malformed ${c.kind}:`));
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      assert.equal(Object.prototype.hasOwnProperty.call(Object.prototype, 'polluted'), false);
      assert.equal(({} as Record<string, unknown>).decision, undefined);
    });
  }
});

describe('decisions: parseDecision normalizes good payloads', () => {
  const good: { kind: DecisionKind; raw: Record<string, unknown>; want: Decision }[] = [
    { kind: 'approve', raw: { ...base }, want: { kind: 'approve', payload: { ...base } } },
    {
      kind: 'approve',
      raw: { ...base, argsDigest: DIGEST, decisionId: 'd1', extra: 'dropped', reason: 'ok' },
      want: { kind: 'approve', payload: { ...base, decisionId: 'd1', argsDigest: DIGEST } },
    },
    {
      kind: 'reject',
      raw: { ...base, reason: 'nope' },
      want: { kind: 'reject', payload: { ...base, reason: 'nope' } },
    },
    { kind: 'reject', raw: { ...base, reason: '' }, want: { kind: 'reject', payload: { ...base } } },
    {
      kind: 'recover',
      raw: { ...base, decision: 'retry' },
      want: { kind: 'recover', payload: { ...base, decision: 'retry' } },
    },
    {
      kind: 'recover',
      raw: { ...base, decision: 'succeeded', result: { id: 1 }, reason: 'checked inbox', decisionId: 'd2' },
      want: {
        kind: 'recover',
        payload: { ...base, decisionId: 'd2', reason: 'checked inbox', decision: 'succeeded', result: { id: 1 } },
      },
    },
    {
      kind: 'recover',
      raw: { ...base, decision: 'succeeded', result: null },
      want: { kind: 'recover', payload: { ...base, decision: 'succeeded', result: null } },
    },
    {
      kind: 'recover',
      raw: { ...base, decision: 'failed' },
      want: { kind: 'recover', payload: { ...base, decision: 'failed' } },
    },
    {
      kind: 'recover',
      raw: { ...base, decision: 'failed', run: 2, park: 3 },
      want: { kind: 'recover', payload: { ...base, decision: 'failed', run: 2, park: 3 } },
    },
    {
      kind: 'approve',
      raw: { toolCallId: 'x'.repeat(256), by: 'b'.repeat(200) },
      want: { kind: 'approve', payload: { toolCallId: 'x'.repeat(256), by: 'b'.repeat(200) } },
    },
  ];
  for (const [i, c] of good.entries()) {
    it(`${c.kind} #${i}`, () => assert.deepEqual(parseDecision(c.kind, c.raw), { ok: true, decision: c.want }));
  }
});

describe('decisions: splitDecisions (the batch signal)', () => {
  const cases: { name: string; raw: unknown; ok?: number; why?: RegExp }[] = [
    {
      name: 'two approvals',
      raw: {
        decisions: [
          { kind: 'approve', ...base },
          { kind: 'approve', ...base, toolCallId: 'call_2' },
        ],
      },
      ok: 2,
    },
    {
      name: 'mixed kinds',
      raw: {
        decisions: [
          { kind: 'approve', ...base },
          { kind: 'reject', ...base, toolCallId: 'call_2' },
          { kind: 'recover', ...base, decision: 'retry' },
        ],
      },
      ok: 3,
    },
    {
      name: 'an item whose payload is bad still splits (it is judged alone)',
      raw: { decisions: [{ kind: 'approve' }] },
      ok: 1,
    },
    { name: 'null', raw: null, why: /expected \{ decisions/ },
    { name: 'an array', raw: [{ kind: 'approve', ...base }], why: /expected \{ decisions/ },
    { name: 'decisions not an array', raw: { decisions: 'approve all' }, why: /expected \{ decisions/ },
    { name: 'empty list', raw: { decisions: [] }, why: /at least one/ },
    {
      name: 'too many',
      raw: { decisions: Array.from({ length: 101 }, (_, i) => ({ kind: 'approve', ...base, toolCallId: `c${i}` })) },
      why: /101 decisions in one signal; at most 100/,
    },
    {
      name: 'unknown kind',
      raw: {
        decisions: [
          { kind: 'approve', ...base },
          { kind: 'execute', ...base },
        ],
      },
      why: /item 2 has kind "execute"/,
    },
    { name: 'missing kind', raw: { decisions: [{ ...base }] }, why: /item 1 has kind undefined/ },
    { name: 'item not an object', raw: { decisions: ['approve'] }, why: /item 1 has kind undefined/ },
    {
      name: 'prototype key as kind',
      raw: { decisions: [{ kind: '__proto__', ...base }] },
      why: /item 1 has kind "__proto__"/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const out = splitDecisions(c.raw);
      if (c.ok !== undefined) {
        assert.ok(out.ok, JSON.stringify(out));
        assert.equal(out.items.length, c.ok);
      } else {
        assert.ok(!out.ok);
        assert.match(out.why, c.why!);
      }
    });
  }
});
