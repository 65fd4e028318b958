import { strict as assert } from 'node:assert';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { CLAIM_ENCODING, claimCheckCodec, directoryStore } from '../../runtime/largePayloads';

describe('large payloads: claim-check codec', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'openworker-payloads-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const small = defaultPayloadConverter.toPayload({ hello: 'world' });
  const large = defaultPayloadConverter.toPayload({ transcript: 'x'.repeat(64 * 1024) });
  const encoding = (p: { metadata?: { encoding?: Uint8Array | null } | null }) =>
    new TextDecoder().decode(p.metadata!.encoding!);

  it('keeps small payloads inline and stores large ones by hash, restoring them byte for byte', async () => {
    const codec = claimCheckCodec(directoryStore(dir), 16 * 1024);
    const [a, b] = await codec.encode([small, large]);
    assert.deepEqual(a, small);
    assert.equal(encoding(b!), CLAIM_ENCODING);
    assert.ok(b!.data!.length < 200, 'history keeps a short reference');
    const [c, d] = await codec.decode([a!, b!]);
    assert.deepEqual(c, small);
    assert.deepEqual(defaultPayloadConverter.fromPayload(d!), defaultPayloadConverter.fromPayload(large));
  });

  it('stores the same content once', async () => {
    const codec = claimCheckCodec(directoryStore(dir), 1024);
    const [x] = await codec.encode([large]);
    const [y] = await codec.encode([large]);
    assert.deepEqual(x, y);
    const files = readdirSync(dir, { recursive: true }).filter((f) => String(f).length > 10);
    assert.equal(files.length, 1);
  });

  it('a missing or corrupt stored payload fails with one line naming the store', async () => {
    const codec = claimCheckCodec(directoryStore(dir), 1024);
    const [ref] = await codec.encode([large]);
    const other = claimCheckCodec(directoryStore(join(dir, 'elsewhere')), 1024);
    await assert.rejects(
      other.decode([ref!]),
      /is not in the payload store .*elsewhere: every client and worker must share it \(OPENWORKER_PAYLOAD_STORE\)/,
    );
    const key = (JSON.parse(new TextDecoder().decode(ref!.data!)) as { sha256: string }).sha256;
    writeFileSync(join(dir, key.slice(0, 2), key), 'garbage');
    await assert.rejects(codec.decode([ref!]), /is corrupt/);
  });
});
