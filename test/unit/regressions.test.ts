import { strict as assert } from 'node:assert';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { demoModel } from '../../activities/models/demo';
import { loadScript } from '../../activities/models/scripted';
import { argsDigest, canonicalJson, executionIdFor } from '../../workflows/identity';
import { assignCallIds } from '../../workflows/plan';
import { entryIn, planned } from './helpers';
import { judgeDecision } from '../../workflows/decisions';
import { attemptFence } from '../../workflows/ledger';

// Bugs found by review, each pinned by the input that exposed it.

describe('regressions', () => {
  it('a renamed call id never collides with another id of the turn', () => {
    const ids = (calls: { toolCallId: string }[]) => calls.map((c) => c.toolCallId);
    const sameResponse = assignCallIds(
      [planned({ toolCallId: 'a' }), planned({ toolCallId: 'a#2' })],
      new Set(['a']),
      2,
    );
    assert.deepEqual(ids(sameResponse), ['a#2.2', 'a#2']);
    const earlier = assignCallIds([planned({ toolCallId: 'a' })], new Set(['a', 'a#2']), 2);
    assert.deepEqual(ids(earlier), ['a#2.2']);
    for (const out of [sameResponse, earlier]) assert.ok(out.every((c) => !c.invalid));
  });

  it('the demo model reads "regarding" as a whole word', async () => {
    const r = await demoModel().generate(
      {
        sessionId: 's',
        turn: 1,
        iteration: 1,
        tools: [],
        messages: [{ role: 'user', content: 'email ann@corp.io regarding the budget' }],
      },
      { signal: new AbortController().signal },
    );
    assert.equal((r.toolCalls[0]!.arguments as { subject: string }).subject, 'The budget');
  });

  it('a multi-line JSON error in a script is reported on one line', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'ow-script-')), 'bad.json');
    writeFileSync(file, '{\n  "steps": [\n    oops\n  ]\n}');
    assert.throws(
      () => loadScript(file),
      (err: Error) => !err.message.includes('\n') && err.message.includes(file),
    );
  });

  it('a __proto__ key is part of the digest, not dropped', () => {
    const withProto = JSON.parse('{"__proto__":{"to":"eve"}}');
    assert.equal(canonicalJson(withProto), '{"__proto__":{"to":"eve"}}');
    assert.notEqual(argsDigest(withProto), argsDigest({}));
  });

  it('execution IDs cannot be forged by moving separators between parts', () => {
    assert.notEqual(executionIdFor('a', 1, 'b\u00002\u0000c'), executionIdFor('a\u00001\u0000b', 2, 'c'));
    assert.notEqual(executionIdFor('a|1', 2, 'c'), executionIdFor('a', 12, 'c'));
  });
});

describe('review findings (second round)', () => {
  it('a decision bound to another execution ID is stale', () => {
    const e = entryIn('awaiting_approval');
    const v = judgeDecision(e, {
      kind: 'approve',
      payload: { toolCallId: e.toolCallId, by: 'alice', executionId: 'owx-other' },
    });
    assert.equal(v.ok, false);
    assert.match((v as { why: string }).why, /^stale: decided for execution owx-other/);
  });

  it('a recover decided for an earlier run is late', async () => {
    const e = { ...entryIn('recovery_required'), runs: 2 };
    const v = judgeDecision(e, {
      kind: 'recover',
      payload: { toolCallId: e.toolCallId, by: 'a', decision: 'retry', run: 1 },
    });
    assert.match((v as { why: string }).why, /late: decided for run 1/);
    assert.deepEqual(
      judgeDecision(e, { kind: 'recover', payload: { toolCallId: e.toolCallId, by: 'a', decision: 'retry', run: 2 } }),
      { ok: true },
    );
  });

  it('the fence is the last dispatch plus start-to-close plus a margin', async () => {
    const e = {
      ...entryIn('reconciling'),
      events: [
        { at: '2026-01-01T00:00:00.000Z', type: 'dispatched' },
        { at: '2026-01-01T00:01:00.000Z', type: 'dispatched' },
      ],
    };
    assert.equal(attemptFence(e, 10_000), Date.parse('2026-01-01T00:01:00.000Z') + 12_000);
    assert.equal(attemptFence({ ...e, events: [] }, 10_000), 0);
  });
});
