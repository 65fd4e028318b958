import { strict as assert } from 'node:assert';
import { Idempotency, IdempotencyError, IdempotencyErrorCodes, type IdempotencyResponse } from '@node-idempotency/core';
import { MemoryStorageAdapter } from '@node-idempotency/storage-adapter-memory';
import { startPaymentsApi, type PaymentsApi } from '../dev/paymentsApi';
import { startPaymentsProcess } from './support/paymentsProcess';

// The payments API fake against every rule of its contract, then cross-checked against a published
// implementation of the same draft (@node-idempotency/core), then once as its own process.

interface Reply {
  status: number;
  replayed: boolean;
  body: Record<string, unknown>;
}
const pay = { customer: 'ann', amount: 1250 };

async function post(api: { url: string }, key: string | undefined, body: unknown): Promise<Reply> {
  const res = await fetch(`${api.url}/payments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(5_000),
  });
  return {
    status: res.status,
    replayed: res.headers.get('idempotent-replayed') === 'true',
    body: (await res.json()) as Record<string, unknown>,
  };
}
async function lookup(api: { url: string }, key: string): Promise<[number, unknown]> {
  const res = await fetch(`${api.url}/payments/by-key/${encodeURIComponent(key)}`, {
    signal: AbortSignal.timeout(5_000),
  });
  return [res.status, await res.json()];
}
const outcomes = (api: PaymentsApi) => api.ledger().requests.map((r) => r.outcome);

describe('payments API fake (Idempotency-Key draft)', function () {
  this.timeout(20_000);
  let clock = 0;
  let api: PaymentsApi;
  before(async () => (api = await startPaymentsApi({ now: () => clock, retentionMs: 1_000 })));
  beforeEach(() => ((clock = 0), api.reset()));
  after(() => api.close());

  it('400 for a missing or malformed key and a malformed body, storing nothing', async () => {
    assert.equal((await post(api, undefined, pay)).status, 400);
    assert.match(String((await post(api, '"unterminated', pay)).body.error), /structured-field string/);
    assert.equal((await post(api, 'x'.repeat(257), pay)).status, 400);
    for (const bad of [
      '{not json',
      { ...pay, amount: 0 },
      { ...pay, amount: 1.5 },
      { amount: 5 },
      { ...pay, extra: 1 },
    ]) {
      const r = await post(api, 'k-bad', bad);
      assert.equal(r.status, 400, JSON.stringify(bad));
      assert.match(String(r.body.error), /^malformed payment: /);
    }
    assert.deepEqual(await lookup(api, 'k-bad'), [404, { applied: false }]);
    assert.equal((await post(api, 'k-bad', pay)).status, 201, 'a rejected body left nothing behind');
    assert.deepEqual(outcomes(api), [
      'missing_key_400',
      'bad_key_400',
      'bad_key_400',
      ...Array(5).fill('bad_body_400'),
      'applied',
    ]);
  });

  it('201 once, then replays the stored response with Idempotent-Replayed and no new effect', async () => {
    const first = await post(api, 'k1', pay);
    assert.deepEqual(first, {
      status: 201,
      replayed: false,
      body: { paymentId: 'pay_000001', ...pay, currency: 'USD', key: 'k1' },
    });
    await api.waitFor('committed', 'k1', 1_000);
    // The same payload with its fields in another order, and the key as a draft sf-string: still the same request.
    for (const [key, body] of [
      ['k1', pay],
      ['k1', { amount: 1250, customer: 'ann' }],
      ['"k1"', pay],
    ] as const) {
      assert.deepEqual(await post(api, key, body), { ...first, replayed: true });
    }
    assert.equal(api.effects('k1'), 1);
    assert.deepEqual(outcomes(api), ['applied', 'replayed', 'replayed', 'replayed']);
    assert.deepEqual(await lookup(api, 'k1'), [200, { applied: true, status: 201, response: first.body }]);
  });

  it('422 for the same key with another payload, never applying it', async () => {
    await post(api, 'k2', pay);
    const r = await post(api, 'k2', { ...pay, amount: 1 });
    assert.equal(r.status, 422);
    assert.equal(api.effects(), 1);
    assert.equal(api.ledger().effects[0]!.body.amount, 1250);
  });

  it('409 (and lookup 409) while the first is in flight; the slow one still commits', async () => {
    api.arm({ mode: 'slow', key: 'k3', delayMs: 60_000 });
    const slow = post(api, 'k3', pay);
    await api.waitFor('slow', 'k3', 2_000);
    assert.equal((await post(api, 'k3', pay)).status, 409);
    assert.equal(
      (await post(api, 'k3', { ...pay, amount: 2 })).status,
      409,
      'in flight wins over a mismatch, as in the draft',
    );
    assert.deepEqual(await lookup(api, 'k3'), [409, { applied: 'in_flight' }]);
    assert.equal(api.effects('k3'), 0);
    assert.equal(api.release('k3'), 1);
    assert.equal((await slow).status, 201);
    api.arm({ mode: 'slow', delayMs: 5 }); // a short delay simply passes
    assert.equal((await post(api, 'k3b', pay)).status, 201);
    assert.deepEqual(outcomes(api), ['conflict_409', 'conflict_409', 'applied', 'applied']);
  });

  it('forgets a key after retentionMs by the injected clock: the same request is applied again', async () => {
    await post(api, 'k4', pay);
    clock = 1_000; // not older than retention yet
    assert.equal((await post(api, 'k4', pay)).replayed, true);
    clock = 1_001;
    assert.deepEqual(await lookup(api, 'k4'), [404, { applied: false }]);
    const again = await post(api, 'k4', pay);
    assert.deepEqual([again.status, again.replayed, again.body.paymentId], [201, false, 'pay_000002']);
    assert.equal(api.effects('k4'), 2, 'the double effect a too-late retry causes');
    await api.waitFor('expired', 'k4', 1_000);
    assert.throws(() => api.advanceClock(1), /clock is injected/);
  });

  it('commit-then-drop: applied and stored, the client sees the connection drop; a retry replays', async () => {
    api.arm({ mode: 'commit-then-drop' });
    await assert.rejects(post(api, 'k5', pay), /fetch failed/);
    await api.waitFor('dropped', 'k5', 1_000);
    assert.equal((await lookup(api, 'k5'))[0], 200);
    assert.deepEqual(await post(api, 'k5', pay).then((r) => [r.status, r.replayed]), [201, true]);
    assert.equal(api.effects('k5'), 1);
  });

  it('commit-then-hang: a retry meanwhile replays; release answers the hung request', async () => {
    api.arm({ mode: 'commit-then-hang', key: 'k6' });
    const hung = post(api, 'k6', pay);
    await api.waitFor('hanging', 'k6', 2_000);
    assert.equal((await post(api, 'k6', pay)).replayed, true);
    assert.equal(api.release(), 1);
    assert.deepEqual([(await hung).status, (await hung).replayed], [201, false]);
    assert.equal(api.effects('k6'), 1);
  });

  it('fail-before-commit: 503 for the next N matching requests, nothing stored, then applied', async () => {
    api.arm({ mode: 'fail-before-commit', key: 'k7', count: 2 });
    assert.equal((await post(api, 'other', pay)).status, 201, 'a fault for k7 leaves other keys alone');
    assert.equal((await post(api, 'k7', pay)).status, 503);
    assert.deepEqual(await lookup(api, 'k7'), [404, { applied: false }]);
    assert.equal((await post(api, 'k7', pay)).status, 503);
    assert.deepEqual(await post(api, 'k7', pay).then((r) => [r.status, r.replayed]), [201, false]);
    assert.deepEqual(outcomes(api), ['applied', 'failed_503', 'failed_503', 'applied']);
  });

  it('5xx-after-commit: applied, answers 500 and replays the stored 500', async () => {
    api.arm({ mode: '5xx-after-commit' });
    assert.equal((await post(api, 'k8', pay)).status, 500);
    assert.deepEqual(await post(api, 'k8', pay).then((r) => [r.status, r.replayed]), [500, true]);
    assert.deepEqual(await lookup(api, 'k8'), [
      200,
      { applied: true, status: 500, response: { error: 'internal error (test fault)' } },
    ]);
    assert.equal(api.effects(), 1);
    assert.deepEqual(
      api.ledger().requests.map((r) => r.fault),
      ['5xx-after-commit', undefined],
    );
  });

  it('control API over HTTP: faults, clock, ledger, release, reset; one-line 400s', async () => {
    const own = await startPaymentsApi({ retentionMs: 50 });
    try {
      const ctl = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${own.url}/_control/${path}`, {
          method,
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(5_000),
        });
        return [res.status, await res.json()] as [number, Record<string, unknown>];
      };
      assert.deepEqual(await ctl('POST', 'faults', { mode: 'explode' }), [
        400,
        {
          error:
            'mode: Invalid option: expected one of "commit-then-drop"|"commit-then-hang"|"fail-before-commit"|"5xx-after-commit"|"slow"',
        },
      ]);
      assert.deepEqual(await ctl('POST', 'faults', { mode: 'slow' }), [400, { error: 'a slow fault needs delayMs' }]);
      assert.equal((await ctl('POST', 'faults', { mode: 'fail-before-commit' }))[0], 200);
      assert.equal((await ctl('DELETE', 'faults'))[0], 200);
      assert.equal((await post(own, 'c1', pay)).status, 201, 'disarmed');
      assert.equal((await ctl('POST', 'clock', { advanceMs: 51 }))[0], 200);
      assert.equal((await post(own, 'c1', pay)).replayed, false, 'expired by the advanced clock');
      assert.deepEqual((await ctl('POST', 'clock', { advanceMs: -1 }))[0], 400);
      const [, ledger] = await ctl('GET', 'ledger');
      assert.deepEqual([(ledger.effects as unknown[]).length, (ledger.requests as unknown[]).length], [2, 2]);
      assert.deepEqual(await ctl('POST', 'release', {}), [200, { released: 0 }]);
      assert.deepEqual(await ctl('POST', 'reset'), [200, { reset: true }]);
      assert.equal(own.effects(), 0);
      assert.equal((await ctl('GET', 'nothing'))[0], 404);
    } finally {
      await own.close();
    }
  });

  it('close() destroys held requests instead of waiting for them', async () => {
    const own = await startPaymentsApi();
    own.arm({ mode: 'commit-then-hang' });
    const hung = post(own, 'h1', pay);
    await own.waitFor('hanging', 'h1', 2_000);
    await own.close();
    await assert.rejects(hung, /fetch failed/);
  });

  // Intentional differences from @node-idempotency/core 1.0.11, left out of the seeded loop and pinned below:
  // core defines no status codes (it throws; its framework wrappers map them), so we compare classes, not codes;
  // core locks the key before the app validates the body (a stored 400 would replay), ours rejects a bad body first;
  // a 503 before commit stores nothing here, core has no such case. Field order, sf-string keys, expiry: see the last test.
  describe('cross-checked against @node-idempotency/core', () => {
    type Cls = 'new' | 'replay' | 'in_flight' | 'mismatch' | 'missing';
    const coreReq = (key: string | undefined, body: Record<string, unknown>) => ({
      method: 'POST',
      path: '/payments',
      headers: key === undefined ? {} : { 'idempotency-key': key },
      body,
    });
    const ours = (r: Reply): Cls =>
      r.replayed
        ? 'replay'
        : ({ 201: 'new', 500: 'new', 409: 'in_flight', 422: 'mismatch', 400: 'missing' } as Record<number, Cls>)[
            r.status
          ]!;
    async function theirs(
      idem: Idempotency,
      key: string | undefined,
      body: Record<string, unknown>,
    ): Promise<[Cls, IdempotencyResponse?]> {
      try {
        const stored = await idem.onRequest(coreReq(key, body));
        return stored ? ['replay', stored] : ['new'];
      } catch (err) {
        if (!(err instanceof IdempotencyError)) throw err;
        if (err.code === IdempotencyErrorCodes.REQUEST_IN_PROGRESS) return ['in_flight'];
        if (err.code === IdempotencyErrorCodes.IDEMPOTENCY_FINGERPRINT_MISSMATCH) return ['mismatch'];
        // 1.0.11 reports a missing key under the code IDEMPOTENCY_KEY_LEN_EXEEDED; its message is the reliable part.
        if (/missing/i.test(err.message)) return ['missing'];
        throw err;
      }
    }
    const stored = (r: Reply): IdempotencyResponse => ({ body: r.body, additional: { status: r.status } });
    function mulberry32(seed: number): () => number {
      return () => {
        seed = (seed + 0x6d2b79f5) | 0;
        let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
        t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
      };
    }

    it('classifies seeded sequences (sequential, overlapping, stored 500s) exactly as core does', async () => {
      const started = Date.now();
      const seen = new Map<Cls, number>();
      const keys = [undefined, 'a', 'b', 'c'];
      const bodies = [pay, { ...pay, amount: 99 }, { customer: 'bob', amount: 5, currency: 'EUR' }];
      for (let seed = 1; seed <= 16; seed++) {
        const rand = mulberry32(seed);
        const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
        const idem = new Idempotency(new MemoryStorageAdapter(), { enforceIdempotency: true });
        const open = new Map<string, { reply: Promise<Reply>; body: Record<string, unknown> }>();
        const trace: string[] = [];
        const finish = async (key: string) => {
          const o = open.get(key)!;
          open.delete(key);
          api.release(key);
          const r = await o.reply;
          assert.equal(r.status, 201, `seed ${seed}: released request`);
          await idem.onResponse(coreReq(key, o.body), stored(r));
          trace.push(`finish ${key}`);
        };
        api.reset();
        for (let step = 0; step < 25; step++) {
          const [roll, key, body] = [rand(), pick(keys), pick(bodies)];
          if (roll < 0.15 && open.size) {
            await finish([...open.keys()][0]!);
            continue;
          }
          const mode = key === undefined ? 'seq' : roll < 0.35 ? 'hold' : roll < 0.45 ? '5xx' : 'seq';
          trace.push(`${mode} ${key ?? '-'} ${bodies.indexOf(body)}`);
          const [expected, theirReply] = await theirs(idem, key, body);
          if (mode === 'hold') api.arm({ mode: 'slow', key, delayMs: 60_000 });
          if (mode === '5xx') api.arm({ mode: '5xx-after-commit', key });
          const reply = post(api, key, body);
          // A held request is "new" the moment it locks its key (its 'slow' barrier), before any reply.
          let onSlow = () => {};
          const held = new Promise<'held'>((resolve) => api.events.once('slow', (onSlow = () => resolve('held'))));
          const got = await Promise.race(mode === 'hold' ? [reply, held] : [reply]);
          api.events.off('slow', onSlow);
          api.disarm(); // an unconsumed fault (the request was not new) must not leak into the next step
          const cls = got === 'held' ? 'new' : ours(got);
          seen.set(cls, (seen.get(cls) ?? 0) + 1);
          assert.equal(cls, expected, `seed ${seed} step ${step}: ${trace.join(' | ')}`);
          if (got === 'held') {
            open.set(key!, { reply, body });
            reply.catch(() => {}); // awaited in finish(); if an assertion fails first, close() rejects it quietly
          } else if (cls === 'new') await idem.onResponse(coreReq(key, body), stored(got));
          else if (cls === 'replay') assert.deepEqual(stored(got), theirReply, `seed ${seed}: replayed response`);
        }
        for (const key of [...open.keys()]) await finish(key);
      }
      assert.deepEqual(
        [...seen.keys()].sort(),
        ['in_flight', 'mismatch', 'missing', 'new', 'replay'],
        'every class was exercised',
      );
      assert.ok(Date.now() - started < 5_000, `bounded: took ${Date.now() - started} ms`);
    });

    it('documented differences: payload key order, sf-string keys, and a duplicate right after expiry', async () => {
      const idem = new Idempotency(new MemoryStorageAdapter(), { enforceIdempotency: true });
      // 1. Core fingerprints JSON.stringify(body), so reordered fields are a "different payload"; ours is canonical.
      await idem.onResponse(coreReq('o', { customer: 'ann', amount: 1 }), { body: {} });
      assert.deepEqual((await theirs(idem, 'o', { amount: 1, customer: 'ann' }))[0], 'mismatch');
      // 2. Core takes the header verbatim; the draft's sf-string "o" is the key o (ours), not a new key.
      assert.deepEqual((await theirs(idem, '"o"', { customer: 'ann', amount: 1 }))[0], 'new');
      // 3. Core's memory adapter ignores expiry in setIfNotExists: the first request after expiry deletes the
      //    entry without locking the key, so a concurrent duplicate is ALSO new (a double effect). Ours locks it.
      await idem.onResponse({ ...coreReq('e', pay), options: { cacheTTLMS: 1 } }, { body: {} });
      await new Promise((resolve) => setTimeout(resolve, 5)); // let core's 1 ms real-clock TTL lapse
      assert.deepEqual([(await theirs(idem, 'e', pay))[0], (await theirs(idem, 'e', pay))[0]], ['new', 'new']);
      await post(api, 'e', pay);
      clock = 2_000;
      api.arm({ mode: 'slow', key: 'e', delayMs: 60_000 });
      const first = post(api, 'e', pay);
      await api.waitFor('slow', 'e', 2_000);
      assert.equal((await post(api, 'e', pay)).status, 409);
      api.release();
      assert.equal((await first).status, 201);
    });
  });

  it('runs as its own process: ready line, barrier lines, control over HTTP, SIGTERM exit', async () => {
    const p = await startPaymentsProcess();
    try {
      assert.match(p.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      await p.arm({ mode: 'commit-then-hang', key: 'proc-1' });
      const pending = post(p, 'proc-1', pay);
      await p.waitFor('committed', 'proc-1', 5_000); // the moment a crash test would kill its worker
      await p.waitFor('hanging', 'proc-1', 5_000);
      assert.equal((await p.ledger()).effects.length, 1);
      assert.equal(await p.release(), 1);
      assert.equal((await pending).status, 201);
      await p.waitFor('answered', 'proc-1', 5_000);
      assert.equal((await post(p, 'proc-1', pay)).replayed, true);
      await p.waitFor('replayed', undefined, 5_000);
      await assert.rejects(p.waitFor('committed', 'never', 50), /not seen within 50 ms/);
      assert.deepEqual(await p.stop(), { code: 0, signal: null });
    } finally {
      await p.stop();
    }
  });
});
