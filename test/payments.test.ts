import { strict as assert } from 'node:assert';
import { approve, recover } from '../client/decisions';
import { turnStatus } from '../client/session';
import type { WaitedTurn } from '../client/session';
import type { LedgerEntry } from '../workflows/types';
import type { PaymentsProcess } from './support/paymentsProcess';
import { startPaymentsProcess } from './support/paymentsProcess';
import { eventually, scripted, startTurn, uniq } from './support/scenario';
import { useWorld } from './support/world';

// create_payment against a real Idempotency-Key API in its own process. Barriers come from the API
// ("committed <key>", "hanging <key>") or the worker's fault points; never from sleeps.

describe('create_payment against an Idempotency-Key API', function () {
  this.timeout(120_000);
  const w = useWorld();
  let api: PaymentsProcess;
  before(async () => {
    api = await startPaymentsProcess();
  });
  after(async () => api?.stop());
  beforeEach(async () => api.reset());

  const script = () => scripted([{ toolCalls: [{ id: 'p1', name: 'create_payment', arguments: { customer: 'acme', amount: 42 } }] }, { text: 'done' }]);
  const worker = (recovery: string, env: Record<string, string> = {}) =>
    w.worker(script(), { env: { OPENWORKER_PAYMENTS_URL: api.url, OPENWORKER_PAYMENTS_RECOVERY: recovery, ...env } });
  const effects = async (key: string) => (await api.ledger()).effects.filter((e) => e.key === key).length;
  const until = (t: WaitedTurn, pred: (e: LedgerEntry & { closed: boolean }) => boolean, what: string) =>
    eventually(async () => {
      const s = await turnStatus(w.c, t.workflowId);
      const e = { ...s.ledger[0]!, closed: s.closed };
      return pred(e) && e;
    }, what, 60_000);
  const parkedPayment = async () => {
    const sessionId = uniq('pay');
    const parked = await startTurn(w.c, sessionId, 'charge acme 42');
    return { sessionId, parked, key: parked.ledger[0]!.executionId };
  };

  it('F4 idempotent: committed, response lost → retried with the same key → the stored answer, one charge', async () => {
    await worker('idempotent');
    const { sessionId, parked, key } = await parkedPayment();
    await api.arm({ mode: 'commit-then-drop', key });
    await approve(w.c, { sessionId, toolCallId: 'p1', by: 'alice' });
    await api.waitFor('committed', key);
    const done = await until(parked, (e) => e.closed, 'turn completes');
    assert.equal(done.state, 'succeeded');
    assert.equal(done.attempts, 2);
    assert.equal((done.result as { replayed: boolean }).replayed, true);
    assert.equal(await effects(key), 1);
  });

  it('F4 + crash, idempotent: worker SIGKILLed while the committed response hangs → one charge', async () => {
    const w1 = await worker('idempotent');
    const { sessionId, parked, key } = await parkedPayment();
    await api.arm({ mode: 'commit-then-hang', key });
    await approve(w.c, { sessionId, toolCallId: 'p1', by: 'alice' });
    await api.waitFor('hanging', key);
    await w1.kill('SIGKILL');
    await worker('idempotent');
    const done = await until(parked, (e) => e.closed, 'turn completes');
    assert.equal(done.state, 'succeeded');
    assert.equal(await effects(key), 1);
  });

  it('F4 + crash, reconcile: the lookup says applied → succeeded without a second request', async () => {
    const w1 = await worker('reconcile');
    const { sessionId, parked, key } = await parkedPayment();
    await api.arm({ mode: 'commit-then-hang', key });
    await approve(w.c, { sessionId, toolCallId: 'p1', by: 'alice' });
    await api.waitFor('hanging', key);
    await w1.kill('SIGKILL');
    await worker('reconcile');
    const done = await until(parked, (e) => e.closed, 'turn completes');
    assert.equal(done.state, 'succeeded');
    assert.equal(done.runs, 1);
    assert.equal((done.result as { reconciled: boolean }).reconciled, true);
    assert.equal((await api.ledger()).requests.filter((r) => r.key === key).length, 1, 'one POST');
    assert.equal(await effects(key), 1);
  });

  it('F8 idempotent: a 5xx after commit is replayed → stop and ask, one charge', async () => {
    await worker('idempotent');
    const { sessionId, parked, key } = await parkedPayment();
    await api.arm({ mode: '5xx-after-commit', key });
    await approve(w.c, { sessionId, toolCallId: 'p1', by: 'alice' });
    const e = await until(parked, (x) => x.state === 'recovery_required', 'parks in recovery_required');
    assert.match(String(e.events.find((ev) => ev.type === 'recovery_required')?.reason), /replays a stored HTTP 500/);
    assert.equal(await effects(key), 1);
    assert.equal((await recover(w.c, { sessionId, toolCallId: 'p1', by: 'ops', decision: 'succeeded' })).outcome, 'applied');
    await until(parked, (x) => x.closed, 'turn completes');
    assert.equal(await effects(key), 1);
  });

  it('F10 payload drift: the key already holds other arguments → 422 → stop and ask, nothing new charged', async () => {
    await worker('idempotent');
    const { sessionId, parked, key } = await parkedPayment();
    // Someone (an older build, another tool) used this key with other arguments.
    const seeded = await fetch(`${api.url}/payments`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
      body: JSON.stringify({ customer: 'acme', amount: 99 }),
    });
    assert.equal(seeded.status, 201);
    await approve(w.c, { sessionId, toolCallId: 'p1', by: 'alice' });
    const e = await until(parked, (x) => x.state === 'recovery_required', 'parks in recovery_required');
    assert.match(String(e.events.find((ev) => ev.type === 'recovery_required')?.reason), /payload drift/);
    assert.equal(await effects(key), 1, 'only the earlier charge');
  });

  it('F9 retention: a retry after the API may have forgotten the key is refused, never sent', async () => {
    const w1 = await worker('idempotent', { OPENWORKER_PAYMENTS_KEY_RETENTION: '2s' });
    const { sessionId, parked, key } = await parkedPayment();
    await api.arm({ mode: 'commit-then-hang', key });
    await approve(w.c, { sessionId, toolCallId: 'p1', by: 'alice' });
    await api.waitFor('hanging', key);
    await w1.kill('SIGKILL');
    await api.advanceClock(25 * 60 * 60 * 1000); // the API forgets the key: a blind retry would charge again
    await worker('idempotent', { OPENWORKER_PAYMENTS_KEY_RETENTION: '2s' });
    const e = await until(parked, (x) => x.state === 'recovery_required', 'parks in recovery_required');
    assert.match(String(e.events.find((ev) => ev.type === 'recovery_required')?.reason), /keeps idempotency keys/);
    assert.equal((await api.ledger()).requests.filter((r) => r.key === key).length, 1, 'the retry never reached the API');
    assert.equal(await effects(key), 1);
  });
});
