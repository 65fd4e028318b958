import { strict as assert } from 'node:assert';
import { z } from 'zod';
import {
  DEFAULT_LIMITS,
  argsProblem,
  boundedCallFields,
  capResult,
  capText,
  capToolCalls,
  jsonBytes,
  limitsFromEnv,
} from '../../activities/limits';
import { createRegistry } from '../../activities/registry';
import { defineTool } from '../../activities/tool';
import { argsDigest } from '../../workflows/identity';
import { MAX_MESSAGE_BYTES, cutUtf8, messageProblem, utf8Bytes } from '../../workflows/limits';
import type { ToolCall } from '../../workflows/types';

const KiB = 1024;

describe('limits: utf8Bytes and cutUtf8 (pure, sandbox-safe)', () => {
  const samples = [
    '',
    'abc',
    'é',
    '€',
    '😀',
    'a😀b',
    '\ud800',
    '\udc00x',
    'x\ud83d',
    'ü'.repeat(1000),
    '日本語テキスト',
  ];
  for (const s of samples) {
    it(`counts ${JSON.stringify(s).slice(0, 20)} as Buffer does`, () =>
      assert.equal(utf8Bytes(s), Buffer.byteLength(s, 'utf8')));
  }
  const cuts: [string, number, string][] = [
    ['abcdef', 3, 'abc'],
    ['abc', 10, 'abc'],
    ['a😀b', 4, 'a'], // the pair needs 4 more bytes: never split
    ['a😀b', 5, 'a😀'],
    ['€€', 5, '€'],
    ['€€', 0, ''],
  ];
  for (const [s, max, want] of cuts) {
    it(`cuts ${JSON.stringify(s)} to ${max} bytes`, () => {
      const got = cutUtf8(s, max);
      assert.equal(got, want);
      assert.ok(utf8Bytes(got) <= max);
    });
  }
});

describe('limits: user messages', () => {
  const cases: { name: string; text: unknown; problem?: RegExp }[] = [
    { name: 'ordinary', text: 'email bob' },
    { name: 'exactly the limit', text: 'x'.repeat(MAX_MESSAGE_BYTES) },
    {
      name: 'one byte over',
      text: 'x'.repeat(MAX_MESSAGE_BYTES + 1),
      problem: /^the message is 32769 bytes; the limit is 32768 bytes: shorten it/,
    },
    { name: 'multi-byte over in bytes, under in characters', text: '€'.repeat(11_000), problem: /33000 bytes/ },
    { name: 'empty', text: '', problem: /empty/ },
    { name: 'blank', text: ' \n ', problem: /empty/ },
    { name: 'not text', text: 42, problem: /must be text, got number/ },
    { name: 'null', text: null, problem: /got null/ },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = messageProblem(c.text);
      if (c.problem) assert.match(got ?? '', c.problem);
      else assert.equal(got, undefined);
    });
  }
});

describe('limits: from the environment', () => {
  const cases: { env: Record<string, string>; want?: Partial<typeof DEFAULT_LIMITS>; error?: RegExp }[] = [
    { env: {}, want: DEFAULT_LIMITS },
    {
      env: { OPENWORKER_MAX_ARGS_BYTES: '1000', OPENWORKER_MAX_TOOL_CALLS: ' 8 ' },
      want: { maxArgsBytes: 1000, maxToolCalls: 8, maxResultBytes: 256 * KiB },
    },
    { env: { OPENWORKER_MAX_RESULT_BYTES: '' }, want: { maxResultBytes: 256 * KiB } },
    {
      env: { OPENWORKER_MAX_RESULT_BYTES: '64k' },
      error: /OPENWORKER_MAX_RESULT_BYTES must be a positive whole number, got '64k' \(default 262144\)$/,
    },
    {
      env: { OPENWORKER_MAX_TOOL_CALLS: '0' },
      error: /OPENWORKER_MAX_TOOL_CALLS must be a positive whole number, got '0'/,
    },
    { env: { OPENWORKER_MAX_MODEL_TEXT_BYTES: '1.5' }, error: /OPENWORKER_MAX_MODEL_TEXT_BYTES/ },
  ];
  for (const c of cases) {
    it(JSON.stringify(c.env), () => {
      if (c.error) assert.throws(() => limitsFromEnv(c.env), c.error);
      else
        assert.deepEqual(
          Object.entries(c.want!).filter(([k, v]) => limitsFromEnv(c.env)[k as keyof typeof DEFAULT_LIMITS] !== v),
          [],
        );
    });
  }
});

describe('limits: tool results (the effect happened: never a failure)', () => {
  const big = { data: 'x'.repeat(300 * KiB) };
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const cases: { name: string; result: unknown; max: number; check: (r: unknown) => void }[] = [
    { name: 'small: unchanged', result: { ok: 1 }, max: 100, check: (r) => assert.deepEqual(r, { ok: 1 }) },
    { name: 'undefined: null', result: undefined, max: 100, check: (r) => assert.equal(r, null) },
    {
      name: 'over the limit: a marked preview',
      result: big,
      max: 256 * KiB,
      check: (r) => {
        const t = r as { truncated: boolean; bytes: number; preview: string; note: string };
        assert.equal(t.truncated, true);
        assert.equal(t.bytes, jsonBytes(big));
        assert.equal(utf8Bytes(t.preview), 4096);
        assert.ok(JSON.stringify(big).startsWith(t.preview));
        assert.match(
          t.note,
          /^the tool ran; its result was 307211 bytes, over the limit of 262144: only the first 4096 bytes/,
        );
      },
    },
    {
      name: 'tiny limit: preview within it',
      result: 'abcdefgh',
      max: 4,
      check: (r) => assert.equal((r as { preview: string }).preview, '"abc'),
    },
    {
      name: 'a cycle: succeeded with a note',
      result: cyclic,
      max: 100,
      check: (r) =>
        assert.match(
          (r as { note: string }).note,
          /^the tool ran, but its result cannot be represented as JSON \(.*circular/i,
        ),
    },
    {
      name: 'a BigInt: succeeded with a note',
      result: { n: 1n },
      max: 100,
      check: (r) => assert.equal((r as { truncated: boolean }).truncated, true),
    },
  ];
  for (const c of cases) it(c.name, () => c.check(capResult(c.result, c.max)));
});

describe('limits: model text and the number of calls', () => {
  it('text under the limit is unchanged; over it is cut with a marker', () => {
    assert.equal(capText('hello', 5), 'hello');
    assert.equal(capText('hello!', 5), "hello\n[openworker: the model's text was 6 bytes; cut to the first 5]");
  });
  const call = (i: number): ToolCall => ({ id: `c${i}`, name: 'lookup', arguments: { q: String(i) } });
  const calls = (n: number) => Array.from({ length: n }, (_, i) => call(i + 1));
  const cases: { n: number; max: number; kept: number; reason?: RegExp }[] = [
    { n: 0, max: 64, kept: 0 },
    { n: 64, max: 64, kept: 64 },
    {
      n: 65,
      max: 64,
      kept: 64,
      reason: /has 65 tool calls; at most 64 are taken from one response, so this call was not executed/,
    },
    {
      n: 5000,
      max: 64,
      kept: 64,
      reason:
        /has 5000 tool calls; .* this call and the 4935 after it \(not listed\) were not executed: make at most 64 calls/,
    },
  ];
  for (const c of cases) {
    it(`${c.n} calls, limit ${c.max}`, () => {
      const got = capToolCalls(calls(c.n), c.max);
      assert.equal(got.kept.length, c.kept);
      if (!c.reason) return assert.equal(got.overflow, undefined);
      assert.equal(got.overflow!.call.id, `c${c.max + 1}`);
      assert.match(got.overflow!.reason, c.reason);
    });
  }
  it('bounds provider ids and names', () => {
    assert.deepEqual(boundedCallFields({ id: 'x'.repeat(500), name: 'n'.repeat(500) }, 0), {
      toolCallId: 'x'.repeat(200),
      name: `${'n'.repeat(64)}…`,
    });
    assert.deepEqual(boundedCallFields(undefined, 3), { toolCallId: 'call_missing_3', name: 'undefined' });
  });
});

describe('limits: the registry', () => {
  const lookup = defineTool({
    name: 'lookup',
    description: 'd',
    effect: 'read',
    input: z.object({ q: z.string() }),
    execute: (i) => i.q,
  });
  const upload = defineTool({
    name: 'upload',
    description: 'd',
    input: z.object({ data: z.string() }),
    maxArgsBytes: 200 * KiB,
    execute: () => 1,
  });
  const registry = createRegistry([lookup, upload], { maxArgsBytes: 100 });
  const cases: { name: string; call: ToolCall; invalid?: RegExp; args?: unknown }[] = [
    { name: 'under the default', call: { id: 'a', name: 'lookup', arguments: { q: 'x'.repeat(80) } } },
    {
      name: 'over the default',
      call: { id: 'a', name: 'lookup', arguments: { q: 'x'.repeat(100) } },
      invalid: /^arguments for 'lookup' are 108 bytes; the limit is 100 bytes: pass less data/,
      args: { omitted: '108 bytes of arguments, over the limit' },
    },
    {
      name: 'as a JSON string, over',
      call: { id: 'a', name: 'lookup', arguments: JSON.stringify({ q: 'x'.repeat(100) }) },
      invalid: /108 bytes/,
    },
    {
      name: 'not JSON and over: the size is said',
      call: { id: 'a', name: 'lookup', arguments: `{${'x'.repeat(200)}` },
      invalid: /are 203 bytes/,
    },
    { name: 'a tool that allows more', call: { id: 'a', name: 'upload', arguments: { data: 'x'.repeat(150 * KiB) } } },
    {
      name: 'a tool that allows more, over it',
      call: { id: 'a', name: 'upload', arguments: { data: 'x'.repeat(250 * KiB) } },
      invalid: /the limit is 204800 bytes/,
    },
    {
      name: 'unknown tool, over: never kept',
      call: { id: 'a', name: 'nope', arguments: { q: 'x'.repeat(100) } },
      invalid: /the limit is 100 bytes/,
    },
    ...['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'].map((name) => ({
      name: `prototype key ${name}`,
      call: { id: 'a', name, arguments: {} },
      invalid: /^unknown tool '.*'; available tools: lookup, upload$/,
    })),
  ];
  for (const c of cases) {
    it(c.name, () => {
      const [p] = registry.plan([c.call]);
      if (!c.invalid) return assert.equal(p!.invalid, undefined);
      assert.match(p!.invalid ?? '', c.invalid);
      if (c.args) assert.deepEqual(p!.arguments, c.args);
      assert.ok(jsonBytes(p!.arguments)! <= 200, 'oversized arguments are not kept');
      assert.equal(
        registry.get(c.call.name),
        c.call.name === 'lookup' || c.call.name === 'upload' ? registry.get(c.call.name) : undefined,
      );
    });
  }
  it('the digest of oversized arguments is of what the model sent', () => {
    const args = { q: 'x'.repeat(100) };
    assert.equal(registry.plan([{ id: 'a', name: 'lookup', arguments: args }])[0]!.argsDigest, argsDigest(args));
  });
  it('a schema failure over many items stays one short line', () => {
    const list = defineTool({
      name: 'list',
      description: 'd',
      input: z.object({ xs: z.array(z.number()) }),
      execute: () => 1,
    });
    const [p] = createRegistry([list]).plan([
      { id: 'a', name: 'list', arguments: { xs: Array.from({ length: 1000 }, () => 'no') } },
    ]);
    assert.match(p!.invalid!, /; and 990 more$/);
    assert.ok(p!.invalid!.length < 1000);
  });
  it('argsProblem: at the limit is fine', () => {
    assert.equal(argsProblem('t', 10, 10), undefined);
    assert.match(argsProblem('t', 11, 10)!, /11 bytes; the limit is 10/);
  });
  it('defineTool refuses a bad limit', () => {
    for (const bad of [0, -1, 1.5, '64k']) {
      assert.throws(
        () =>
          defineTool({
            name: 't',
            description: 'd',
            input: z.object({}),
            maxResultBytes: bad as number,
            execute: () => 1,
          }),
        /defineTool\("t"\): maxResultBytes must be a positive whole number of bytes/,
      );
    }
  });
});
