import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OpenWorkerClient } from '../client/connection';
import { approve, recover } from '../client/decisions';
import { createApproverKey } from '../client/keys';
import { turnStatus } from '../client/session';
import type { WaitedTurn } from '../client/session';
import type { PaymentsApi } from '../dev/paymentsApi';
import { startPaymentsApi } from '../dev/paymentsApi';
import type { LedgerEntry } from '../workflows/types';
import { requireFaketime, skewedClockEnv } from './support/clockSkew';
import { runCli, spawnWorker } from './support/processes';
import { client, eventually, scripted, startTurn, uniq } from './support/scenario';

// The clock-skew tier: worker processes whose wall clock is minutes off (NTP broken, libfaketime)
// against a Temporal server and a payments API on true time. Every decision that compares times
// must use the server's clock (activities/serverClock.ts); the worker's clock must not matter.

const BEHIND = -90;
const AHEAD = 300;

describe('clock skew: a worker whose wall clock is minutes off', function () {
  this.timeout(60_000);
  let c: OpenWorkerClient;
  let api: PaymentsApi;
  let taskQueue: string;
  before(function () {
    requireFaketime(this);
  });
  beforeEach(async () => {
    taskQueue = uniq('tq-skew');
    c = await client(taskQueue);
  });
  afterEach(async () => {
    api?.release();
    await api?.close();
    await c?.close();
  });

  const payment = (customer: string) =>
    scripted([
      { toolCalls: [{ id: 'p1', name: 'create_payment', arguments: { customer, amount: 4200 } }] },
      { text: 'Charged.' },
    ]);
  const worker = async (
    customer: string,
    skew: number,
    env: { recovery: string; window: string; timeout: string; extra?: Record<string, string>; only?: string },
  ) =>
    spawnWorker({
      taskQueue,
      model: payment(customer),
      clockSkewSeconds: skew,
      ...(env.only ? { extraArgs: ['--only', env.only] } : {}),
      env: {
        OPENWORKER_PAYMENTS_URL: api.url,
        OPENWORKER_PAYMENTS_RECOVERY: env.recovery,
        OPENWORKER_PAYMENTS_KEY_RETENTION: env.window,
        OPENWORKER_PAYMENTS_TIMEOUT: env.timeout,
        ...env.extra,
      },
    });
  const entry = async (t: WaitedTurn): Promise<LedgerEntry & { closed: boolean }> => {
    const s = await turnStatus(c, t.workflowId);
    return { ...s.ledger[0]!, closed: s.closed };
  };
  const until = (t: WaitedTurn, pred: (e: LedgerEntry) => boolean, what: string) =>
    eventually(async () => {
      const e = await entry(t);
      return pred(e) && e;
    }, what);
  const parks = (e: LedgerEntry): number => e.events.filter((ev) => ev.type === 'recovery_required').length;
  const charges = (customer: string): number => api.ledger().effects.filter((x) => x.body.customer === customer).length;

  it('the issue’s repro: 90 s behind, a person’s retry after the idempotency window escalates instead of charging again (1 charge)', async () => {
    // The API forgets keys after 3 s, as the tool declares; the retry's fence alone waits 5 s.
    api = await startPaymentsApi({ retentionMs: 3_000 });
    const customer = uniq('behind');
    await worker(customer, BEHIND, { recovery: 'manual', window: '3s', timeout: '3s' });
    api.arm({ mode: 'commit-then-drop', count: 1 });
    const t = await startTurn(c, uniq('skew'), 'charge');
    await approve(c, { sessionId: t.sessionId, toolCallId: 'p1', by: 'alice' });
    const parked = await until(t, (x) => x.state === 'recovery_required', 'the unknown outcome parks');
    assert.equal(parked.dispatched, true);
    assert.equal(charges(customer), 1);
    const decided = await recover(c, { sessionId: t.sessionId, toolCallId: 'p1', decision: 'retry', by: 'alice' });
    assert.equal(decided.outcome, 'applied', JSON.stringify(decided));
    const e = await until(t, (x) => parks(x) === 2 || x.state === 'succeeded', 'the retry is decided');
    // The fence is the server's: the retry ran no earlier than the last attempt's window.
    const fence = e.events.find((ev) => ev.type === 'retry_fenced');
    const rerun = e.events.filter((ev) => ev.type === 'scheduled')[1];
    assert.ok(fence && rerun, JSON.stringify(e.events));
    assert.ok(Date.parse(rerun.at) >= Date.parse(String(fence.until)), `${rerun.at} before ${String(fence.until)}`);
    assert.equal(charges(customer), 1, 'the retry charged again: the worker’s clock opened the window');
    assert.equal(e.state, 'recovery_required');
    const last = e.events.filter((ev) => ev.type === 'outcome_unknown').at(-1);
    assert.match(String(last?.reason), /not retried: the first attempt was \d+s ago by the Temporal server's clock/);
  });

  it('90 s behind: a retry scheduled inside the window but started past it, after no worker polled, escalates (1 charge)', async () => {
    // Scheduled ~5 s after the first attempt (its fence), started ~10 s after: the server's start
    // time, not its schedule time, is what the 8 s window is measured against.
    api = await startPaymentsApi({ retentionMs: 8_000 });
    const customer = uniq('late');
    const env = { recovery: 'manual', window: '8s', timeout: '2s' };
    await worker(customer, BEHIND, { ...env, only: 'workflows' });
    const activities = await worker(customer, BEHIND, { ...env, only: 'activities' });
    api.arm({ mode: 'commit-then-drop', count: 1 });
    const t = await startTurn(c, uniq('skew'), 'charge');
    await approve(c, { sessionId: t.sessionId, toolCallId: 'p1', by: 'alice' });
    const parked = await until(t, (x) => x.state === 'recovery_required', 'the unknown outcome parks');
    const first = Date.parse(parked.events.find((ev) => ev.type === 'scheduled')!.at);
    await activities.kill('SIGKILL');
    await recover(c, { sessionId: t.sessionId, toolCallId: 'p1', decision: 'retry', by: 'alice' });
    const rerun = await until(
      t,
      (x) => x.events.filter((ev) => ev.type === 'scheduled').length === 2,
      'the retry is scheduled',
    );
    const scheduled = Date.parse(rerun.events.filter((ev) => ev.type === 'scheduled')[1]!.at);
    assert.ok(scheduled - first < 6_000, `the retry was scheduled ${scheduled - first} ms after the first attempt`);
    await eventually(async () => Date.now() > first + 8_000, 'the window passes with no activity worker', 15_000);
    await worker(customer, BEHIND, { ...env, only: 'activities' });
    const e = await until(t, (x) => parks(x) === 2 || x.state === 'succeeded', 'the retry is decided');
    assert.equal(charges(customer), 1, 'the late retry charged again: its schedule time hid the wait for a worker');
    assert.equal(e.state, 'recovery_required');
    // Escalated on the server's start time (not because the server could not say).
    const last = e.events.filter((ev) => ev.type === 'outcome_unknown').at(-1);
    assert.match(String(last?.reason), /not retried: the first attempt was \d+s ago by the Temporal server's clock/);
  });

  it('5 min ahead: an automatic retry inside the idempotency window runs and replays the charge (1 charge, no escalation)', async () => {
    // The tier's premise: a Node process under this preload is 5 min ahead, and the worker loads it
    // (the turn below shows it polls the un-skewed server and completes activities).
    const shifted = spawnSync(process.execPath, ['-e', 'console.log(Date.now())'], {
      env: { ...process.env, ...skewedClockEnv(AHEAD) },
      encoding: 'utf8',
    });
    const offset = Number(shifted.stdout) - Date.now();
    assert.ok(Math.abs(offset - AHEAD * 1000) < 2_000, `a Node process under libfaketime is off by ${offset} ms`);
    api = await startPaymentsApi({ retentionMs: 60_000 });
    const customer = uniq('ahead');
    const w = await worker(customer, AHEAD, { recovery: 'idempotent', window: '60s', timeout: '5s' });
    assert.match(readFileSync(`/proc/${w.proc.pid}/maps`, 'utf8'), /libfaketime/, 'the worker loaded libfaketime');
    api.arm({ mode: 'commit-then-drop', count: 1 });
    const t = await startTurn(c, uniq('skew'), 'charge');
    await approve(c, { sessionId: t.sessionId, toolCallId: 'p1', by: 'alice' });
    const e = await until(t, (x) => x.state === 'succeeded' || x.state === 'recovery_required', 'the call settles');
    assert.equal(e.state, 'succeeded', JSON.stringify(e.events));
    assert.equal((e.result as { replayed?: boolean }).replayed, true, 'the retry reached the API and was replayed');
    assert.equal(charges(customer), 1);
  });

  it('90 s behind: a reconcile lookup that finds nothing after the window is not believed (1 charge)', async () => {
    api = await startPaymentsApi({ retentionMs: 3_000 });
    const customer = uniq('reconcile');
    await worker(customer, BEHIND, { recovery: 'reconcile', window: '3s', timeout: '3s' });
    // The API commits and holds its answer; the attempt times out at 3 s. By then the API has
    // forgotten the key: only the window tells "not found" from "forgotten".
    api.arm({ mode: 'commit-then-hang', count: 1 });
    const t = await startTurn(c, uniq('skew'), 'charge');
    await approve(c, { sessionId: t.sessionId, toolCallId: 'p1', by: 'alice' });
    await api.waitFor('committed', undefined, 20_000);
    api.advanceClock(10_000);
    const e = await until(t, (x) => x.state === 'recovery_required' || x.state === 'succeeded', 'the call settles');
    assert.equal(charges(customer), 1, 'a forgotten key was taken for "not applied" and charged again');
    assert.equal(e.state, 'recovery_required');
    const asked = e.events.find((ev) => ev.type === 'reconciled');
    assert.match(String(asked?.reason), /lookup found nothing, but the first attempt was \d+s ago/);
  });

  it('a signer’s clock: 90 s behind is accepted, 5 min ahead is refused and says to check the signer’s clock', async () => {
    api = await startPaymentsApi();
    const dir = mkdtempSync(join(tmpdir(), 'openworker-skew-'));
    try {
      const keys = { OPENWORKER_KEYS_DIR: join(dir, 'keys') };
      const { publicKey } = createApproverKey('alice', keys.OPENWORKER_KEYS_DIR);
      const approvers = join(dir, 'approvers.json');
      writeFileSync(
        approvers,
        JSON.stringify({ approvers: { alice: publicKey }, policy: [{ tool: 'create_payment', approvers: ['alice'] }] }),
      );
      const customer = uniq('signed');
      await worker(customer, BEHIND, {
        recovery: 'manual',
        window: '60s',
        timeout: '5s',
        extra: { OPENWORKER_APPROVERS: approvers },
      });
      const t = await startTurn(c, uniq('skew'), 'charge');
      const signedOn = (skew: number) =>
        runCli(['approve', t.sessionId, 'p1', '--task-queue', taskQueue], {
          env: { ...keys, ...skewedClockEnv(skew) },
        });
      const ahead = await signedOn(AHEAD);
      assert.equal(ahead.code, 3, ahead.stdout + ahead.stderr);
      assert.match(ahead.stdout, /in the future of this turn's clock; check the signer's clock/);
      const behind = await signedOn(BEHIND);
      assert.equal(behind.code, 0, behind.stdout + behind.stderr);
      const e = await until(t, (x) => x.state === 'succeeded', 'the payment succeeds');
      assert.equal(e.approvedBy, 'alice');
      assert.equal(charges(customer), 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
