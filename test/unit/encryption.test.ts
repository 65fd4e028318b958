import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import {
  ENCRYPTED_ENCODING,
  defaultKeyFile,
  encryptionCodec,
  ensureLocalKeyFile,
  keyringFromEnv,
  keyringFromFile,
  keyringFromList,
} from '../../runtime/encryption';
import { defaultPayloadCodecs } from '../../runtime/dataConverter';
import { settingsFrom } from '../../runtime/settings';

const b64 = () => randomBytes(32).toString('base64');
const SECRET = 'the launch is on Monday, tell nobody';
const payload = () => defaultPayloadConverter.toPayload({ body: SECRET })!;
const text = (p: { data?: Uint8Array | null }) => Buffer.from(p.data ?? new Uint8Array()).toString('latin1');

describe('encryption: AES-256-GCM payload codec', () => {
  const k1 = b64();
  const k2 = b64();

  it('seals with the active key, tags the key id, and opens again', async () => {
    const codec = encryptionCodec(keyringFromList(`k1=${k1}`));
    const [sealed] = await codec.encode([payload()]);
    assert.equal(Buffer.from(sealed!.metadata!.encoding!).toString(), ENCRYPTED_ENCODING);
    assert.equal(Buffer.from(sealed!.metadata!['encryption-key-id']!).toString(), 'k1');
    assert.ok(!text(sealed!).includes('launch'), 'no plaintext in the sealed payload');
    const [opened] = await codec.decode([sealed!]);
    assert.deepEqual(defaultPayloadConverter.fromPayload(opened!), { body: SECRET });
  });

  it('the same payload seals differently each time (a fresh IV)', async () => {
    const codec = encryptionCodec(keyringFromList(`k1=${k1}`));
    const [a] = await codec.encode([payload()]);
    const [b] = await codec.encode([payload()]);
    assert.notDeepEqual(Buffer.from(a!.data!), Buffer.from(b!.data!));
  });

  it('rotation: a ring with the new key first seals with it and still opens the old key', async () => {
    const [old] = await encryptionCodec(keyringFromList(`k1=${k1}`)).encode([payload()]);
    const rotated = encryptionCodec(keyringFromList(`k2=${k2},k1=${k1}`));
    const [fresh] = await rotated.encode([payload()]);
    assert.equal(Buffer.from(fresh!.metadata!['encryption-key-id']!).toString(), 'k2');
    for (const p of [old!, fresh!])
      assert.deepEqual(defaultPayloadConverter.fromPayload((await rotated.decode([p]))[0]!), { body: SECRET });
  });

  const failures: {
    name: string;
    alter: (p: { data?: Uint8Array | null; metadata?: Record<string, Uint8Array> | null }) => void;
    ring: () => string;
    why: RegExp;
  }[] = [
    {
      name: 'an unknown key id',
      alter: () => undefined,
      ring: () => `k2=${k2}`,
      why: /encrypted with key 'k1', which this process does not have \(it has k2 from OPENWORKER_ENCRYPTION_KEYS\); add that key/,
    },
    {
      name: 'a flipped byte',
      alter: (p) => (p.data![p.data!.length - 1]! ^= 1),
      ring: () => `k1=${k1}`,
      why: /does not authenticate/,
    },
    {
      name: 'another key under the same id',
      alter: () => undefined,
      ring: () => `k1=${k2}`,
      why: /does not authenticate/,
    },
    {
      name: 'a truncated payload',
      alter: (p) => (p.data = p.data!.subarray(0, 10)),
      ring: () => `k1=${k1}`,
      why: /truncated \(10 bytes\)/,
    },
  ];
  for (const f of failures) {
    it(`refuses ${f.name} with a clear error`, async () => {
      const [sealed] = await encryptionCodec(keyringFromList(`k1=${k1}`)).encode([payload()]);
      const copy = { metadata: { ...sealed!.metadata }, data: new Uint8Array(sealed!.data!) };
      f.alter(copy);
      await assert.rejects(() => encryptionCodec(keyringFromList(f.ring())).decode([copy]), f.why);
    });
  }

  it('passes payloads that were never encrypted through (history written before keys were set)', async () => {
    const p = payload();
    assert.deepEqual((await encryptionCodec(keyringFromList(`k1=${k1}`)).decode([p]))[0], p);
  });
});

describe('encryption: where the keys come from', () => {
  const k = b64();
  const dir = mkdtempSync(join(tmpdir(), 'ow-keys-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, body: string): string => {
    const f = join(dir, name);
    writeFileSync(f, body);
    return f;
  };

  const lists: [string, RegExp | string][] = [
    [`a=${k}`, 'a'],
    [`new=${k}, old=${b64()}`, 'new'],
    ['', /no keys/],
    ['justakey', /expected id=base64key entries/],
    [
      `a=${Buffer.alloc(16).toString('base64')}`,
      /key 'a' must be 32 bytes in base64 \(openssl rand -base64 32\), got 16 bytes/,
    ],
    [`a=${k},a=${k}`, /key id 'a' appears twice/],
    [`bad id=${k}`, /key id 'bad id' must be 1-64 letters/],
  ];
  for (const [list, want] of lists) {
    it(`OPENWORKER_ENCRYPTION_KEYS=${JSON.stringify(list.replace(/=[^,]*/g, '=<key>'))} → ${want}`, () => {
      if (typeof want === 'string') assert.equal(keyringFromList(list).active, want);
      else assert.throws(() => keyringFromList(list), want);
    });
  }

  it('a key file names its active key', () => {
    const ring = keyringFromFile(file('ok.json', JSON.stringify({ active: 'k2', keys: { k1: b64(), k2: k } })));
    assert.equal(ring.active, 'k2');
    assert.equal(ring.keys.size, 2);
  });
  const badFiles: [string, string, RegExp][] = [
    ['not json', '{', /encryption key file .*not-json.json: /],
    ['no keys', '{"active":"k1"}', /expected \{ "active"/],
    [
      'active not a key',
      JSON.stringify({ active: 'k9', keys: { k1: k } }),
      /"active" must name one of its keys \(k1\)/,
    ],
  ];
  for (const [name, body, why] of badFiles)
    it(`a key file with ${name} is refused`, () =>
      assert.throws(() => keyringFromFile(file(`${name.replace(/ /g, '-')}.json`, body)), why));

  const envs: [string, NodeJS.ProcessEnv, 'none' | string | RegExp][] = [
    ['nothing set', {}, 'none'],
    ['off wins over keys', { OPENWORKER_ENCRYPTION: 'off', OPENWORKER_ENCRYPTION_KEYS: `a=${k}` }, 'none'],
    ['keys', { OPENWORKER_ENCRYPTION_KEYS: `a=${k}` }, 'a'],
    [
      'on without keys',
      { OPENWORKER_ENCRYPTION: 'on', OPENWORKER_ENCRYPTION_KEY_FILE: '' },
      /OPENWORKER_ENCRYPTION=on but no keys/,
    ],
    ['a typo in the switch', { OPENWORKER_ENCRYPTION: 'of' }, /must be 'on' or 'off', got 'of'/],
    [
      'a key file that does not exist',
      { OPENWORKER_ENCRYPTION_KEY_FILE: join(dir, 'missing.json') },
      /encryption key file .*missing\.json: ENOENT/,
    ],
  ];
  for (const [name, env, want] of envs) {
    it(`environment: ${name}`, () => {
      if (want === 'none') assert.equal(keyringFromEnv(env), undefined);
      else if (typeof want === 'string') assert.equal(keyringFromEnv(env)!.active, want);
      else assert.throws(() => keyringFromEnv(env), want);
    });
  }
});

describe('encryption: the local key `dev` generates', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'ow-state-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  // The environment of a process whose state dir is this test's.
  const at = (env: NodeJS.ProcessEnv = {}) => ({ OPENWORKER_STATE_DIR: join(dir, '.openworker'), ...env });

  const configured: [string, NodeJS.ProcessEnv][] = [
    ['OPENWORKER_ENCRYPTION=off', { OPENWORKER_ENCRYPTION: 'OFF' }],
    ['keys in the environment', { OPENWORKER_ENCRYPTION_KEYS: `a=${b64()}` }],
    ['a key file named', { OPENWORKER_ENCRYPTION_KEY_FILE: '/etc/openworker/keys.json' }],
  ];
  for (const [name, env] of configured) {
    it(`none with ${name}`, () => {
      assert.equal(ensureLocalKeyFile(settingsFrom(at(env))), undefined);
      assert.ok(!existsSync(defaultKeyFile(join(dir, '.openworker'))));
    });
  }

  it('otherwise once: 0600, {active, keys}, id local-<date>, 32 bytes; every later process loads it', async () => {
    const file = ensureLocalKeyFile(settingsFrom(at()), new Date('2025-03-04T12:00:00Z'));
    assert.equal(file, join(dir, '.openworker', 'encryption-keys.json'));
    assert.equal(statSync(file!).mode & 0o777, 0o600);
    const body = readFileSync(file!, 'utf8');
    const ring = keyringFromEnv(at());
    assert.equal(ring?.active, 'local-20250304');
    assert.equal(ring?.keys.get('local-20250304')?.length, 32);
    assert.equal(ensureLocalKeyFile(settingsFrom(at())), undefined, 'an existing key is never replaced');
    assert.equal(readFileSync(file!, 'utf8'), body);
    // OPENWORKER_ENCRYPTION=on is satisfied by the local file.
    assert.equal(keyringFromEnv(at({ OPENWORKER_ENCRYPTION: 'on' }))?.active, 'local-20250304');
  });

  it('a process without keys names the key a sealed payload needs, in one line', async () => {
    const [sealed] = await encryptionCodec(keyringFromList(`k7=${b64()}`)).encode([payload()]);
    const [, oldReferences] = defaultPayloadCodecs(at());
    assert.ok(oldReferences, 'the reader of old claim-check references stays');
    await assert.rejects(
      defaultPayloadCodecs(at())[0]!.decode([sealed!]),
      /^Error: payload encrypted with key 'k7', and this process has no keys: run where `dev` ran \(it reads .*encryption-keys\.json\) or set OPENWORKER_ENCRYPTION_KEY_FILE or OPENWORKER_ENCRYPTION_KEYS$/,
    );
    const plain = payload();
    assert.deepEqual(await defaultPayloadCodecs(at())[0]!.decode([plain]), [plain], 'plain payloads pass');
  });
});
