import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { combinedCodec } from '../../runtime/dataConverter';
import { encryptionCodec, keyringFromList } from '../../runtime/encryption';
import { contextStoreOn } from '../../runtime/contextStore';
import { fileDriver } from '../../runtime/payloadStorage';
import {
  assistantMessage,
  compactionCut,
  contextAfterTurn,
  contextInput,
  contextKey,
  estimateTokens,
  modelView,
  storedAtStart,
  summaryMessage,
  toolCallIdsIn,
  turnContextRef,
} from '../../workflows/context';
import type { ContextRef, Message } from '../../workflows/types';
import { planned } from './helpers';

const ref = (messages: number, sha = 'a'): ContextRef => ({ driver: 'd', claim: { sha256: sha }, messages });
const u = (content: string): Message => ({ role: 'user', content });

describe('transcripts by reference: the rules (workflows/context.ts)', () => {
  it('the assistant message names each call by its final id, and none without calls', () => {
    const call = planned({ toolCallId: 'c1#2', name: 'lookup', arguments: { q: 1 } });
    assert.deepEqual(assistantMessage('hi', [call]), {
      role: 'assistant',
      content: 'hi',
      toolCalls: [{ id: 'c1#2', name: 'lookup', arguments: { q: 1 } }],
    });
    assert.deepEqual(assistantMessage('done', []), { role: 'assistant', content: 'done' });
    assert.deepEqual([...toolCallIdsIn([u('x'), assistantMessage('', [call])])], ['c1#2']);
  });

  const contextCases: [string, ContextRef | undefined, ContextRef | undefined, number, ContextRef | undefined][] = [
    ['a turn without a reference keeps the old one', ref(4), undefined, 6, ref(4)],
    ['the first reference is taken', undefined, ref(6), 6, ref(6)],
    ['a later reference replaces the old', ref(4), ref(9, 'b'), 10, ref(9, 'b')],
    ['one counting past the transcript is not taken', ref(4), ref(11, 'b'), 10, ref(4)],
    ['one counting fewer than the kept one is not taken', ref(8), ref(5, 'b'), 10, ref(8)],
    ['a count that is not an integer is not taken', ref(4), ref(Number.NaN, 'b'), 10, ref(4)],
  ];
  for (const [name, kept, turn, length, want] of contextCases)
    it(`after a turn: ${name}`, () => assert.deepEqual(contextAfterTurn(kept, turn, length), want));

  it('a model call appends the history once, then only what is new', () => {
    const history = [u('old')];
    const messages = [u('new'), assistantMessage('a', [])];
    assert.deepEqual(contextInput(storedAtStart(ref(3)), history, messages), {
      base: ref(3),
      append: [u('old'), u('new'), assistantMessage('a', [])],
    });
    assert.deepEqual(contextInput({ ref: ref(6), history: true, upTo: 2 }, history, [...messages, u('more')]), {
      base: ref(6),
      append: [u('more')],
    });
    assert.deepEqual(contextInput(storedAtStart(undefined), [], [u('x')]), { append: [u('x')] });
    assert.equal(turnContextRef(storedAtStart(ref(3))), undefined, 'nothing stored by this turn yet');
    assert.deepEqual(turnContextRef({ ref: ref(6), history: true, upTo: 2 }), ref(6));
    assert.equal(contextKey({ driver: 'd', claim: { b: '2', a: '1' }, messages: 1 }), 'd:a=1&b=2');
  });
});

describe('transcripts by reference: the store (runtime/contextStore.ts)', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'ctx-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const files = (): string[] =>
    readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((f) => f.isFile())
      .map((f) => join(f.parentPath, f.name));

  it('stores each segment once and reads the chain back on a worker that cached nothing', async () => {
    const writer = contextStoreOn(() => fileDriver(dir));
    const a = await writer.append(undefined, [u('one'), u('two')]);
    const b = await writer.append(a, [u('three')]);
    assert.equal(await writer.append(b, []), b, 'nothing new, nothing stored');
    assert.equal(b.messages, 3);
    assert.equal(files().length, 2);
    const reader = contextStoreOn(() => fileDriver(dir));
    assert.deepEqual(await reader.read(b), [u('one'), u('two'), u('three')]);
    assert.deepEqual(await reader.read(undefined), []);
    // Two sessions with the same first message share its segment (content-addressed).
    await reader.append(undefined, [u('one'), u('two')]);
    assert.equal(files().length, 2);
  });

  it('refuses a reference from another store, and one whose count the chain does not hold', async () => {
    const store = contextStoreOn(() => fileDriver(dir));
    const a = await store.append(undefined, [u('one')]);
    const fresh = () => contextStoreOn(() => fileDriver(dir));
    await assert.rejects(fresh().read({ ...a, driver: 'openworker.s3' }), /driver 'openworker.s3'.*same store/);
    await assert.rejects(fresh().read({ ...a, messages: 2 }), /holds 1 messages, its reference says 2/);
    await assert.rejects(
      fresh().read({ ...a, claim: { sha256: '0'.repeat(64) } }),
      /payload 0{64} is missing from the payload store /,
    );
  });

  it('seals segments with the codecs: no message text in the store', async () => {
    const codec = combinedCodec([encryptionCodec(keyringFromList(`k1=${randomBytes(32).toString('base64')}`))]);
    const store = contextStoreOn(() => fileDriver(dir), codec);
    const r = await store.append(undefined, [u('the launch is on Monday')]);
    for (const f of files()) assert.ok(!readFileSync(f).toString('latin1').includes('launch'));
    assert.deepEqual(await contextStoreOn(() => fileDriver(dir), codec).read(r), [u('the launch is on Monday')]);
  });
});

describe('compaction: the rules (workflows/context.ts)', () => {
  const a = (content: string, ...ids: string[]): Message =>
    ids.length
      ? { role: 'assistant', content, toolCalls: ids.map((id) => ({ id, name: 't', arguments: {} })) }
      : { role: 'assistant', content };
  const t = (id: string): Message => ({ role: 'tool', toolCallId: id, name: 't', content: 'r' });
  // One token per message, to make the budget readable.
  const count = (m: readonly Message[]) => m.length;

  const cuts: [string, Message[], number, number, number | undefined][] = [
    ['keeps the newest messages that fit', [u('1'), a('1'), u('2'), a('2'), u('3'), a('3')], 0, 2, 4],
    ['never cuts between a call and its result', [u('1'), a('', 'c'), t('c'), a('1'), u('2')], 0, 3, 3],
    ['nor at a tool result', [u('1'), a('', 'c', 'd'), t('c'), t('d'), u('2')], 0, 2, 4],
    ['keeps as little as is safe when nothing fits', [u('1'), a('', 'c'), t('c'), a('1')], 0, 0, 3],
    ['only after the last summary', [u('1'), a('1'), u('2'), a('2')], 2, 4, 3],
    ['nothing to summarise', [u('1')], 0, 0, undefined],
    ['a call whose result is still to come stays with the kept messages', [u('1'), a('', 'c')], 0, 0, 1],
  ];
  for (const [name, messages, from, keep, want] of cuts)
    it(`cut: ${name}`, () => assert.equal(compactionCut(messages, from, keep, count), want));

  it('the model sees the summary, joined to a first user message, then the newer messages', () => {
    const messages = [u('1'), a('1'), u('2'), a('2')];
    const joined = modelView(messages, { text: 'S', covers: 2 });
    assert.equal(joined.length, 2);
    assert.match(joined[0]!.content, /^\[Summary of the 2 earlier messages[^\n]*\]\nS\n\n2$/);
    assert.deepEqual(modelView(messages, { text: 'S', covers: 3 }), [summaryMessage('S', 3), a('2')]);
    assert.deepEqual(modelView(messages, undefined), messages);
  });

  it('estimates tokens as UTF-8 bytes ÷ 4, 16 bytes of framing per message, tool calls included', () => {
    assert.equal(estimateTokens([u('abcd')]), 5);
    assert.equal(estimateTokens([u('é'.repeat(8))]), 8);
    assert.ok(estimateTokens([a('', 'c')]) > estimateTokens([a('')]));
  });
});
