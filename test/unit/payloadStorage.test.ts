import { strict as assert } from 'node:assert';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ExternalStorage, defaultPayloadConverter, type Payload } from '@temporalio/common';
import { decodeReferencePayload, isReferencePayload } from '@temporalio/common/lib/internal-non-workflow';
import { combinedCodec, defaultPayloadCodecs, storageCodec } from '../../runtime/dataConverter';
import { encryptionCodec, keyringFromList } from '../../runtime/encryption';
import {
  DEFAULT_THRESHOLD_BYTES,
  FILE_DRIVER,
  fileDriver,
  payloadFile,
  payloadStoreConfig,
  type PayloadStoreConfig,
} from '../../runtime/payloadStorage';
import { CLAIM_ENCODING, claimCheckReader } from '../../runtime/claimCheckReader';
import { FIXTURE_CONVERTER_ENV, HISTORIES } from '../support/histories';

const files = (dir: string) =>
  readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => /[0-9a-f]{64}$/.test(f));

describe('payload storage: the SDK external storage with a directory driver', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'openworker-payloads-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const storage = (threshold = DEFAULT_THRESHOLD_BYTES) =>
    storageCodec(new ExternalStorage({ drivers: [fileDriver(dir)], payloadSizeThreshold: threshold }));
  const small = defaultPayloadConverter.toPayload({ hello: 'world' });
  const large = defaultPayloadConverter.toPayload({ transcript: 'x'.repeat(64 * 1024) });

  it('keeps small payloads inline, stores large ones by hash, and restores them byte for byte', async () => {
    const [a, b] = await storage().encode([small, large]);
    assert.deepEqual(a, small);
    assert.ok(isReferencePayload(b!), 'history keeps an SDK external storage reference');
    const ref = decodeReferencePayload(b!);
    assert.equal(ref.driverName, FILE_DRIVER);
    assert.deepEqual(Object.keys(ref.claimData), ['sha256']);
    assert.ok(b!.data!.length < 200, `the reference is short (${b!.data!.length} bytes)`);
    assert.deepEqual(files(dir), [join(ref.claimData.sha256!.slice(0, 2), ref.claimData.sha256!)]);
    const back = await storage().decode([a!, b!]);
    assert.deepEqual(
      back.map((p) => defaultPayloadConverter.fromPayload(p)),
      [small, large].map((p) => defaultPayloadConverter.fromPayload(p)),
    );
  });

  it('stores the same content once', async () => {
    const [x] = await storage(1024).encode([large]);
    const [y] = await storage(1024).encode([large]);
    assert.deepEqual(x, y);
    assert.equal(files(dir).length, 1);
  });

  it('storing bytes that are already there refreshes their mtime, the age `storage expire` measures (#40)', async () => {
    await storage(1024).encode([large]);
    const [file] = files(dir).map((f) => join(dir, f));
    const old = new Date(Date.now() - 40 * 86_400_000);
    utimesSync(file!, old, old);
    const before = Date.now() - 1_000; // a file system's mtime may be coarser than the clock
    await storage(1024).encode([large]);
    assert.ok(statSync(file!).mtimeMs >= before, `mtime ${statSync(file!).mtime.toISOString()} was not refreshed`);
    assert.equal(files(dir).length, 1);
  });

  it('a missing or corrupt stored payload fails with one line naming the store', async () => {
    const [ref] = await storage(1024).encode([large]);
    const elsewhere = storageCodec(
      new ExternalStorage({ drivers: [fileDriver(join(dir, 'elsewhere'))], payloadSizeThreshold: 1024 }),
    );
    await assert.rejects(
      elsewhere.decode([ref!]),
      /payload [0-9a-f]{64} is missing from the payload store .*elsewhere: restore it from a backup if `storage expire` deleted it .* \(every client and worker must use the same OPENWORKER_PAYLOAD_STORE\)$/,
    );
    writeFileSync(join(dir, files(dir)[0]!), 'garbage');
    await assert.rejects(storage(1024).decode([ref!]), /is corrupt \(its hash differs\)$/);
  });

  it('with encryption: what is stored outside history is ciphertext', async () => {
    const secret = 'the launch is on Monday, tell nobody';
    const ring = keyringFromList(`k1=${Buffer.alloc(32, 1).toString('base64')}`);
    // The order a worker applies: codecs seal, then the SDK stores what they produced.
    const codec = combinedCodec([encryptionCodec(ring), storage(64)]);
    const big = defaultPayloadConverter.toPayload({ body: secret.repeat(20) });
    const [ref] = await codec.encode([big]);
    assert.ok(isReferencePayload(ref!));
    const stored = files(dir).map((f) => readFileSync(join(dir, f)).toString('latin1'));
    assert.equal(stored.length, 1);
    assert.ok(!stored[0]!.includes('launch'));
    assert.deepEqual(defaultPayloadConverter.fromPayload((await codec.decode([ref!]))[0]!), {
      body: secret.repeat(20),
    });
  });
});

describe('payload storage: OPENWORKER_PAYLOAD_STORE', () => {
  const cases: [string | undefined, PayloadStoreConfig | RegExp][] = [
    ['/srv/payloads', { kind: 'file', dir: '/srv/payloads' }],
    ['relative/dir', { kind: 'file', dir: resolve('relative/dir') }],
    ['file:///srv/p', { kind: 'file', dir: '/srv/p' }],
    ['s3://my-bucket', { kind: 's3', bucket: 'my-bucket', prefix: '' }],
    ['s3://my-bucket/', { kind: 's3', bucket: 'my-bucket', prefix: '' }],
    ['s3://my-bucket/openworker/prod/', { kind: 's3', bucket: 'my-bucket', prefix: 'openworker/prod' }],
    [
      's3://',
      /OPENWORKER_PAYLOAD_STORE: 's3:\/\/' has no valid bucket name: use s3:\/\/bucket or s3:\/\/bucket\/prefix$/,
    ],
    ['s3://a_b/x', /has no valid bucket name/],
    [
      'gs://bucket/p',
      /OPENWORKER_PAYLOAD_STORE: 'gs:\/\/bucket\/p' is not supported: use s3:\/\/bucket\/prefix or a directory$/,
    ],
  ];
  for (const [value, want] of cases) {
    it(`${value ?? '(unset)'} → ${want instanceof RegExp ? 'a one-line error' : want.kind}`, () => {
      const env = { OPENWORKER_PAYLOAD_STORE: value };
      if (want instanceof RegExp) assert.throws(() => payloadStoreConfig(env), want);
      else assert.deepEqual(payloadStoreConfig(env), want);
    });
  }

  it('unset → <state dir>/payloads', () => {
    const c = payloadStoreConfig({});
    assert.equal(c.kind, 'file');
    assert.match((c as { dir: string }).dir, /[/\\]payloads$/);
  });
});

describe('payload storage: references written by the old claim-check codec', () => {
  // A turn's history recorded by the build before External Storage: no longer replayed (baseline 1),
  // kept as data, since a stored payload outlives the histories that reference it.
  const oldReferences = (file: string): Payload[] => {
    const marker = Buffer.from(CLAIM_ENCODING).toString('base64');
    const found: Payload[] = [];
    const visit = (v: unknown): void => {
      if (!v || typeof v !== 'object') return;
      const o = v as { metadata?: Record<string, string>; data?: string };
      if (o.metadata?.encoding === marker)
        found.push({
          metadata: Object.fromEntries(Object.entries(o.metadata).map(([k, x]) => [k, Buffer.from(x, 'base64')])),
          data: Buffer.from(o.data ?? '', 'base64'),
        });
      else Object.values(v).forEach(visit);
    };
    visit(JSON.parse(readFileSync(join(HISTORIES, '..', 'claim-check', file), 'utf8')));
    return found;
  };

  it("still decode: a recorded turn's sealed 22 KB message comes back whole", async () => {
    const refs = oldReferences('turn-history.json');
    assert.ok(refs.length >= 2, `found ${refs.length} old references`);
    const codecs = combinedCodec(defaultPayloadCodecs(FIXTURE_CONVERTER_ENV));
    const values = (await codecs.decode(refs)).map((p) => JSON.stringify(defaultPayloadConverter.fromPayload(p)));
    assert.ok(values.every((v) => v.includes('A long message. '.repeat(1400))));
  });

  it('a reference whose payload is not there names the directory and the setting', async () => {
    const [ref] = oldReferences('turn-history.json');
    await assert.rejects(
      claimCheckReader('/nonexistent').decode([ref!]),
      /is missing from the payload store \/nonexistent: .* \(every client and worker must use the same OPENWORKER_LEGACY_PAYLOAD_DIR\)$/,
    );
    assert.match(payloadFile('/d', 'ab'.repeat(32)), /^\/d\/ab\/(ab){32}$/);
  });
});
