import { strict as assert } from 'node:assert';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { demoModel } from '../../activities/models/demo';
import { loadScript } from '../../activities/models/scripted';
import { argsDigest, canonicalJson, executionIdFor } from '../../workflows/identity';
import { assignCallIds } from '../../workflows/plan';
import { planned } from './helpers';

// Bugs found by review, each pinned by the input that exposed it.

describe('regressions', () => {
  it('a renamed call id never collides with another id of the turn', () => {
    const ids = (calls: { toolCallId: string }[]) => calls.map((c) => c.toolCallId);
    const sameResponse = assignCallIds([planned({ toolCallId: 'a' }), planned({ toolCallId: 'a#2' })], new Set(['a']), 2);
    assert.deepEqual(ids(sameResponse), ['a#2.2', 'a#2']);
    const earlier = assignCallIds([planned({ toolCallId: 'a' })], new Set(['a', 'a#2']), 2);
    assert.deepEqual(ids(earlier), ['a#2.2']);
    for (const out of [sameResponse, earlier]) assert.ok(out.every((c) => !c.invalid));
  });

  it('the demo model reads "regarding" as a whole word', async () => {
    const r = await demoModel().generate(
      { sessionId: 's', turn: 1, iteration: 1, tools: [], messages: [{ role: 'user', content: 'email ann@corp.io regarding the budget' }] },
      { signal: new AbortController().signal },
    );
    assert.equal((r.toolCalls[0]!.arguments as { subject: string }).subject, 'The budget');
  });

  it('a multi-line JSON error in a script is reported on one line', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'ow-script-')), 'bad.json');
    writeFileSync(file, '{\n  "steps": [\n    oops\n  ]\n}');
    assert.throws(() => loadScript(file), (err: Error) => !err.message.includes('\n') && err.message.includes(file));
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
