import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExternalStorage, StorageDriverClaim, defaultPayloadConverter } from '@temporalio/common';
import { encodeReferencePayload } from '@temporalio/common/lib/internal-non-workflow';
import type { CodecServer } from '../../apps/codecServer';
import { codecTokenFromEnv, newCodecToken, startCodecServer } from '../../apps/codecServer';
import { encryptionCodec, keyringFromList } from '../../runtime/encryption';
import { combinedCodec, storageCodec } from '../../runtime/dataConverter';
import { FILE_DRIVER, fileDriver } from '../../runtime/payloadStorage';
import { claimCheckReader } from '../../runtime/claimCheckReader';

// The Web UI's codec endpoint: an external storage reference in, the stored payload out.

describe('codec endpoint for the Web UI', () => {
  let dir: string;
  let server: CodecServer;
  const codec = () =>
    combinedCodec([
      claimCheckReader(dir),
      storageCodec(new ExternalStorage({ drivers: [fileDriver(dir)], payloadSizeThreshold: 1024 })),
    ]);
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'openworker-codec-'));
    server = await startCodecServer({ codec: codec() });
  });
  afterEach(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const b64 = (u: Uint8Array | null | undefined) => Buffer.from(u ?? new Uint8Array()).toString('base64');

  it('POST /decode turns references back into the stored payloads; small ones pass through', async () => {
    const large = defaultPayloadConverter.toPayload({ transcript: 'y'.repeat(4096) });
    const small = defaultPayloadConverter.toPayload('hi');
    const [ref] = await codec().encode([large]);
    const body = {
      payloads: [ref!, small].map((p) => ({
        metadata: Object.fromEntries(Object.entries(p.metadata!).map(([k, v]) => [k, b64(v)])),
        data: b64(p.data),
      })),
    };
    // The Web UI 2.5x posts to /decode?preserveStorageRefs=true.
    const res = await fetch(`${server.url}/decode?preserveStorageRefs=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-namespace': 'default', origin: 'http://127.0.0.1:8233' },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200);
    assert.equal(
      res.headers.get('access-control-allow-origin'),
      'http://127.0.0.1:8233',
      'the UI sends credentials: its origin is echoed, never *',
    );
    assert.equal(res.headers.get('access-control-allow-credentials'), 'true');
    const out = (await res.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    const back = out.payloads.map((p) =>
      defaultPayloadConverter.fromPayload({
        metadata: Object.fromEntries(
          Object.entries(p.metadata).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))]),
        ),
        data: new Uint8Array(Buffer.from(p.data, 'base64')),
      }),
    );
    assert.deepEqual(back, [{ transcript: 'y'.repeat(4096) }, 'hi']);
  });

  it('with encryption keys: /decode opens sealed payloads (stored or not), /encode seals them', async () => {
    const ring = keyringFromList(`k1=${randomBytes(32).toString('base64')}`);
    const both = combinedCodec([encryptionCodec(ring), codec()]);
    const keyed = await startCodecServer({ codec: both });
    try {
      const sealed = await both.encode([
        defaultPayloadConverter.toPayload({ transcript: 'z'.repeat(4096) }),
        defaultPayloadConverter.toPayload('secret note'),
      ]);
      const wire = (ps: typeof sealed) => ({
        payloads: ps.map((p) => ({
          metadata: Object.fromEntries(Object.entries(p.metadata!).map(([k, v]) => [k, b64(v)])),
          data: b64(p.data),
        })),
      });
      assert.ok(!JSON.stringify(wire(sealed)).includes(Buffer.from('secret note').toString('base64')));
      const post = async (op: string, body: unknown) => {
        const res = await fetch(`${keyed.url}/${op}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        assert.equal(res.status, 200);
        return ((await res.json()) as { payloads: { metadata: Record<string, string>; data: string }[] }).payloads.map(
          (p) => ({
            metadata: Object.fromEntries(
              Object.entries(p.metadata).map(([k, v]) => [k, new Uint8Array(Buffer.from(v, 'base64'))]),
            ),
            data: new Uint8Array(Buffer.from(p.data, 'base64')),
          }),
        );
      };
      const opened = await post('decode', wire(sealed));
      assert.deepEqual(
        opened.map((p) => defaultPayloadConverter.fromPayload(p)),
        [{ transcript: 'z'.repeat(4096) }, 'secret note'],
      );
      const resealed = await post('encode', wire(opened));
      assert.equal(Buffer.from(resealed[1]!.metadata['encryption-key-id']!).toString(), 'k1');
      assert.deepEqual(defaultPayloadConverter.fromPayload((await both.decode(resealed))[1]!), 'secret note');
    } finally {
      await keyed.close();
    }
  });

  it('answers the browser preflight, and a bad body with 400 and a reason', async () => {
    const pre = await fetch(`${server.url}/decode`, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://localhost:8233',
        'access-control-request-headers': 'content-type,x-namespace,authorization',
      },
    });
    assert.equal(pre.status, 204);
    assert.equal(pre.headers.get('access-control-allow-headers'), 'content-type,x-namespace,authorization');
    assert.equal(pre.headers.get('access-control-allow-origin'), 'http://localhost:8233');
    const foreign = await fetch(`${server.url}/decode`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example' },
    });
    assert.equal(
      foreign.headers.get('access-control-allow-origin'),
      null,
      'a page from elsewhere cannot read decoded payloads',
    );
    const bad = await fetch(`${server.url}/decode`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: 'nope',
    });
    assert.equal(bad.status, 400);
    assert.match(((await bad.json()) as { error: string }).error, /JSON/);
  });

  it('refuses what a page elsewhere could send: non-JSON bodies, foreign Host headers, references that are not a SHA-256', async () => {
    const plain = await fetch(`${server.url}/decode`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{"payloads":[]}',
    });
    assert.equal(plain.status, 415);
    const rebound = await new Promise<number>((resolve, reject) => {
      const u = new URL(`${server.url}/decode`);
      const req = http.request(
        {
          host: u.hostname,
          port: u.port,
          path: u.pathname,
          method: 'POST',
          headers: { host: 'evil.example', 'content-type': 'application/json' },
        },
        (res) => resolve(res.statusCode ?? 0),
      );
      req.on('error', reject);
      req.end('{"payloads":[]}');
    });
    assert.equal(rebound, 403);
    const old = {
      metadata: { encoding: b64(new TextEncoder().encode('binary/openworker-claim-check')) },
      data: b64(new TextEncoder().encode(JSON.stringify({ sha256: '../../../../etc/passwd' }))),
    };
    const current = encodeReferencePayload({
      driverName: FILE_DRIVER,
      claim: new StorageDriverClaim({ sha256: '../../../../etc/passwd' }),
      sizeBytes: 10,
    });
    const json = {
      metadata: Object.fromEntries(Object.entries(current.metadata!).map(([k, v]) => [k, b64(v)])),
      data: b64(current.data),
    };
    for (const ref of [old, json]) {
      const traversal = await fetch(`${server.url}/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ payloads: [ref] }),
      });
      assert.equal(traversal.status, 400);
      assert.match(((await traversal.json()) as { error: string }).error, /not a payload reference/);
    }
  });

  describe('with a token', () => {
    const token = newCodecToken();
    let guarded: CodecServer;
    beforeEach(async () => {
      guarded = await startCodecServer({ codec: codec(), token });
    });
    afterEach(() => guarded.close());
    const body = JSON.stringify({
      payloads: [
        {
          metadata: { encoding: b64(new TextEncoder().encode('json/plain')) },
          data: b64(new TextEncoder().encode('"hi"')),
        },
      ],
    });

    const cases: { name: string; path: string; auth?: string; status: number }[] = [
      { name: 'no token', path: '/decode', status: 401 },
      { name: 'the bearer token', path: '/decode', auth: `Bearer ${token}`, status: 200 },
      { name: 'the bearer token, scheme in lower case', path: '/encode', auth: `bearer ${token}`, status: 200 },
      {
        name: 'a wrong bearer token of the same length',
        path: '/decode',
        auth: `Bearer ${newCodecToken()}`,
        status: 401,
      },
      { name: 'a prefix of the token', path: '/decode', auth: `Bearer ${token.slice(0, -1)}`, status: 401 },
      { name: 'the token with something appended', path: '/decode', auth: `Bearer ${token}x`, status: 401 },
      { name: 'the token as Basic credentials', path: '/decode', auth: `Basic ${token}`, status: 401 },
      { name: 'an empty bearer', path: '/decode', auth: 'Bearer ', status: 401 },
      {
        name: 'the token as the path prefix (what the Web UI is given)',
        path: `/${token}/decode?preserveStorageRefs=true`,
        status: 200,
      },
      { name: 'the token as the path prefix, /encode', path: `/${token}/encode`, status: 200 },
      { name: 'a wrong path prefix', path: `/${newCodecToken()}/decode`, status: 401 },
      { name: 'an empty path prefix (parsed as a host: not served)', path: '//decode', status: 404 },
      { name: 'the token in the query only', path: `/decode?token=${token}`, status: 401 },
      { name: 'a wrong path prefix with the bearer token', path: `/nope/decode`, auth: `Bearer ${token}`, status: 200 },
      { name: 'the token nested deeper', path: `/x/${token}/decode`, status: 404 },
    ];
    for (const c of cases) {
      it(`${c.name} → ${c.status}`, async () => {
        const res = await fetch(`${guarded.url}${c.path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...(c.auth !== undefined ? { authorization: c.auth } : {}) },
          body,
        });
        assert.equal(res.status, c.status);
        const json = (await res.json()) as { error?: string; payloads?: unknown[] };
        if (c.status === 401) {
          assert.equal(res.headers.get('www-authenticate'), 'Bearer');
          assert.match(json.error!, /^the codec endpoint needs its token: [^\n]+$/, 'one line');
          assert.ok(!JSON.stringify(json).includes(token), 'the refusal does not echo the token');
        }
        if (c.status === 200) assert.equal(json.payloads?.length, 1);
      });
    }

    it('the preflight stays open and allows the authorization header; a 401 still carries CORS for the UI', async () => {
      const pre = await fetch(`${guarded.url}/decode`, {
        method: 'OPTIONS',
        headers: {
          origin: 'http://localhost:8233',
          'access-control-request-headers': 'authorization,content-type,x-namespace',
        },
      });
      assert.equal(pre.status, 204);
      assert.match(pre.headers.get('access-control-allow-headers')!, /authorization/);
      const bare = await fetch(`${guarded.url}/decode`, { method: 'OPTIONS' });
      assert.match(bare.headers.get('access-control-allow-headers')!, /authorization/, 'the default list names it too');
      const denied = await fetch(`${guarded.url}/decode`, {
        method: 'POST',
        headers: { origin: 'http://localhost:8233', 'content-type': 'application/json' },
        body,
      });
      assert.equal(denied.status, 401);
      assert.equal(denied.headers.get('access-control-allow-origin'), 'http://localhost:8233');
    });

    it('uiEndpoint carries the token in its path; without a token it is the bare url and a path prefix is unknown', async () => {
      assert.equal(guarded.uiEndpoint, `${guarded.url}/${token}`);
      assert.equal(server.uiEndpoint, server.url);
      const res = await fetch(`${server.url}/${token}/decode`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      assert.equal(res.status, 404);
    });
  });

  it('tokens: fresh ones differ and are URL-safe; OPENWORKER_CODEC_TOKEN is taken, or refused in one line', async () => {
    const a = newCodecToken();
    assert.match(a, /^[A-Za-z0-9_-]{43}$/);
    assert.notEqual(a, newCodecToken());
    assert.equal(codecTokenFromEnv({ OPENWORKER_CODEC_TOKEN: ' my-fixed-token-1234 ' }), 'my-fixed-token-1234');
    assert.match(codecTokenFromEnv({}), /^[A-Za-z0-9_-]{43}$/);
    for (const bad of ['short', 'has/slash-in-it-0123', 'has space in it 0123', 'x'.repeat(257)]) {
      assert.throws(
        () => codecTokenFromEnv({ OPENWORKER_CODEC_TOKEN: bad }),
        /^Error: OPENWORKER_CODEC_TOKEN must be 16-256 [^\n]+$/,
      );
    }
    await assert.rejects(startCodecServer({ codec: codec(), token: 'a/b' }), /token must be 16-256/);
  });
});
