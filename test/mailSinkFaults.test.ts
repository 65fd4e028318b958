import { strict as assert } from 'node:assert';
import { ToolFailure } from '../activities/tool';
import { sendEmailTool } from '../activities/tools/sendEmail';
import { startMailSink, type MailSink } from '../dev/mailSink';
import { startMailSinkProcess, type MailSinkProcess } from './support/mailSinkProcess';
import { ctxFor, mail, rejectsWith } from './support/sendEmailCall';

describe('mail sink runtime faults', function () {
  this.timeout(20_000);
  let s: MailSink;
  let tool: ReturnType<typeof sendEmailTool>;
  const idOf = (executionId: string) => `<${executionId}@openworker-temporal>`;
  const send = (executionId: string, input: typeof mail & { cc?: string[] } = mail) =>
    Promise.resolve(tool.execute(input, ctxFor(executionId)));
  /** The promise, plus whether it has settled yet (to show that a client is still waiting). */
  const track = <T>(promise: Promise<T>) => {
    const state = { settled: false, promise };
    promise.then(
      () => (state.settled = true),
      () => (state.settled = true),
    );
    return state;
  };
  const outcomes = () => s.ledger().transactions.map((t) => `${t.outcome} ${t.messageId}`);

  before(async () => {
    s = await startMailSink();
    tool = sendEmailTool({ host: '127.0.0.1', port: s.smtpPort, from: 'bot@openworker.test', lookupUrl: s.lookupUrl });
  });
  beforeEach(() => s.reset());
  after(() => s.close());

  it('hold-250: stores, holds the reply until release, delivers once', async () => {
    s.arm({ mode: 'hold-250' });
    const sending = track(send('exec-hold'));
    await s.waitFor('holding', idOf('exec-hold'));
    assert.equal(s.deliveries(idOf('exec-hold')), 1);
    assert.equal((await tool.reconcile!(mail, ctxFor('exec-hold'))).status, 'applied'); // visible while the 250 is held
    await new Promise((r) => setImmediate(r));
    assert.equal(sending.settled, false, 'the client must still be waiting for the 250');
    assert.equal(s.release('<nobody@x>'), 0);
    assert.equal(s.release(idOf('exec-hold')), 1);
    const result = await sending.promise;
    assert.match(result.response ?? '', /^250/);
    assert.equal(s.deliveries(idOf('exec-hold')), 1);
    const [t] = s.ledger().transactions;
    assert.equal(t.outcome, 'held');
    assert.ok(t.releasedAt && t.releasedAt >= t.at);
    await s.waitFor('released', idOf('exec-hold'));
  });

  it('hold-commit: stores nothing while held; a release commits for a connected client and abandons one that hung up', async () => {
    s.arm({ mode: 'hold-commit', count: 3 });
    const sending = track(send('exec-slow'));
    await s.waitFor('holding', idOf('exec-slow'));
    assert.equal(s.deliveries(idOf('exec-slow')), 0, 'a slow server has not committed yet');
    assert.deepEqual(await tool.reconcile!(mail, ctxFor('exec-slow')), { status: 'not_applied' });
    await new Promise((r) => setImmediate(r));
    assert.equal(sending.settled, false, 'the client must still be waiting for the 250');
    assert.equal(s.release(idOf('exec-slow')), 1);
    assert.match((await sending.promise).response ?? '', /^250/);
    assert.equal(s.deliveries(idOf('exec-slow')), 1);
    await s.waitFor('released', idOf('exec-slow'));

    // The client gives up (its AbortSignal, as at an activity's start-to-close) before the server commits.
    const abort = new AbortController();
    const giving = rejectsWith(Promise.resolve(tool.execute(mail, ctxFor('exec-gone', abort.signal))));
    await s.waitFor('holding', idOf('exec-gone'));
    abort.abort();
    assert.match((await giving).message, /outcome unknown: the send was cancelled/);
    await s.waitFor('hangup', idOf('exec-gone'));
    assert.equal(s.release(idOf('exec-gone')), 1);
    await s.waitFor('abandoned', idOf('exec-gone'));
    assert.equal(s.deliveries(idOf('exec-gone')), 0, 'a transaction abandoned by its client is never committed');

    // A reset answers a held client 451 and stores nothing.
    const reset = rejectsWith(send('exec-slow-reset'));
    await s.waitFor('holding', idOf('exec-slow-reset'));
    s.reset();
    assert.match((await reset).message, /451/);
    assert.equal(s.deliveries(idOf('exec-slow-reset')), 0);
  });

  it('hold-commit: the transactions say stored and abandoned, with when the client hung up', async () => {
    s.arm({ mode: 'hold-commit', count: 2 });
    const kept = track(send('exec-kept'));
    const abort = new AbortController();
    const gone = rejectsWith(Promise.resolve(tool.execute(mail, ctxFor('exec-left', abort.signal))));
    await Promise.all([s.waitFor('holding', idOf('exec-kept')), s.waitFor('holding', idOf('exec-left'))]);
    abort.abort();
    await gone;
    await s.waitFor('hangup', idOf('exec-left'));
    assert.equal(s.release(), 2);
    await kept.promise;
    await s.waitFor('abandoned', idOf('exec-left'));
    const byId = new Map(s.ledger().transactions.map((t) => [t.messageId, t]));
    const k = byId.get('exec-kept@openworker-temporal')!;
    const l = byId.get('exec-left@openworker-temporal')!;
    assert.deepEqual([k.outcome, k.fault, k.hungUpAt], ['stored', 'hold-commit', undefined]);
    assert.deepEqual([l.outcome, l.fault], ['abandoned', 'hold-commit']);
    assert.ok(l.hungUpAt && l.releasedAt && l.hungUpAt <= l.releasedAt, JSON.stringify(l));
    assert.deepEqual(
      s.messages().map((m) => m.messageId),
      ['exec-kept@openworker-temporal'],
    );
  });

  it('relay: holds, then commits after commitAfterMs even though its client hung up; a connected client hears the 250', async () => {
    s.arm({ mode: 'relay', commitAfterMs: 300, count: 2 });
    const abort = new AbortController();
    const gone = rejectsWith(Promise.resolve(tool.execute(mail, ctxFor('exec-relay', abort.signal))));
    await s.waitFor('holding', idOf('exec-relay'));
    assert.deepEqual(await tool.reconcile!(mail, ctxFor('exec-relay')), { status: 'not_applied' }, 'not yet');
    abort.abort();
    await gone;
    await s.waitFor('hangup', idOf('exec-relay'));
    await s.waitFor('stored', idOf('exec-relay'));
    assert.equal(s.deliveries(idOf('exec-relay')), 1, 'the relay commits what it has, client or not');
    assert.equal((await tool.reconcile!(mail, ctxFor('exec-relay'))).status, 'applied');
    const [t] = s.ledger().transactions;
    assert.deepEqual([t!.outcome, t!.fault], ['stored', 'relay']);
    assert.ok(t!.hungUpAt && t!.releasedAt && t!.hungUpAt <= t!.releasedAt, JSON.stringify(t));

    const kept = await send('exec-relay-kept');
    assert.match(kept.response ?? '', /^250/);
    assert.equal(s.deliveries(idOf('exec-relay-kept')), 1);
    assert.throws(() => s.arm({ mode: 'hold-250', commitAfterMs: 5 }), /commitAfterMs only goes with mode relay/);
  });

  it('store-then-drop: stored, the client sees an unknown outcome', async () => {
    s.arm({ mode: 'store-then-drop' });
    const err = await rejectsWith(send('exec-rt-drop'));
    assert.ok(!(err instanceof ToolFailure), `expected an unknown outcome, got ToolFailure: ${err.message}`);
    assert.match(err.message, /outcome unknown: the connection was lost/);
    assert.equal(s.deliveries(idOf('exec-rt-drop')), 1);
    await s.waitFor('dropped', idOf('exec-rt-drop'));
    assert.deepEqual(outcomes(), ['dropped exec-rt-drop@openworker-temporal']);
  });

  it('451: nothing stored, reconcile says not_applied', async () => {
    s.arm({ mode: '451' });
    const err = await rejectsWith(send('exec-rt-451'));
    assert.ok(!(err instanceof ToolFailure), `expected an unknown outcome, got ToolFailure: ${err.message}`);
    assert.match(err.message, /replied 451/);
    assert.equal(s.deliveries(idOf('exec-rt-451')), 0);
    assert.deepEqual(await tool.reconcile!(mail, ctxFor('exec-rt-451')), { status: 'not_applied' });
    await s.waitFor('failed', idOf('exec-rt-451'));
    const [t] = s.ledger().transactions;
    assert.deepEqual(
      { outcome: t.outcome, code: t.code, fault: t.fault },
      { outcome: 'failed_451', code: 451, fault: '451' },
    );
  });

  it('554-after-store: stored, the client gets an error, reconcile says applied', async () => {
    s.arm({ mode: '554-after-store' });
    const err = await rejectsWith(send('exec-rt-554'));
    assert.ok(!(err instanceof ToolFailure), `expected an unknown outcome, got ToolFailure: ${err.message}`);
    assert.match(err.message, /replied 554/);
    assert.equal(s.deliveries(idOf('exec-rt-554')), 1);
    assert.equal((await tool.reconcile!(mail, ctxFor('exec-rt-554'))).status, 'applied');
    await s.waitFor('stored', idOf('exec-rt-554'));
    await s.waitFor('failed', idOf('exec-rt-554'));
    assert.deepEqual(outcomes(), ['stored_554 exec-rt-554@openworker-temporal']);
  });

  it('a fault applies to the next `count` matching messages, then disarms', async () => {
    s.arm({ mode: '451', count: 2 });
    await rejectsWith(send('exec-count-1'));
    await rejectsWith(send('exec-count-2'));
    await send('exec-count-3');
    assert.deepEqual(
      outcomes().map((o) => o.split(' ')[0]),
      ['failed_451', 'failed_451', 'stored'],
    );

    s.arm({ mode: '554-after-store', recipient: 'Bob@Example.com' });
    await send('exec-rcpt-alice'); // not bob: the fault stays armed
    await rejectsWith(send('exec-rcpt-bob', { ...mail, cc: ['bob@example.com'] }));
    await send('exec-rcpt-bob-2', { ...mail, cc: ['bob@example.com'] });
    assert.deepEqual(
      outcomes()
        .slice(3)
        .map((o) => o.split(' ')[0]),
      ['stored', 'stored_554', 'stored'],
    );

    s.arm({ mode: '451', count: 5 });
    s.disarm();
    await send('exec-disarmed');
    assert.equal(s.deliveries(idOf('exec-disarmed')), 1);
    assert.throws(() => s.arm({ mode: 'nope' as never }), /mode/);
    assert.throws(() => s.arm({ mode: '451', count: 0 }), /count/);
  });

  it('reset forgets messages, transactions and faults, and releases held replies', async () => {
    await send('exec-before-reset');
    s.arm({ mode: 'hold-250' });
    const sending = track(send('exec-held-reset'));
    await s.waitFor('holding', idOf('exec-held-reset'));
    s.arm({ mode: '451', count: 3 });
    s.reset();
    assert.match((await sending.promise).response ?? '', /^250/);
    assert.deepEqual(s.ledger(), { messages: [], transactions: [] });
    assert.equal(s.deliveries(idOf('exec-before-reset')), 0);
    assert.equal((await fetch(`${s.lookupUrl}/${encodeURIComponent(idOf('exec-before-reset'))}`)).status, 404);
    await send('exec-after-reset'); // the 451 fault went with the reset
    assert.deepEqual(outcomes(), ['stored exec-after-reset@openworker-temporal']);
    await assert.rejects(s.waitFor('holding', idOf('exec-held-reset'), 50), /not seen within 50 ms/); // history is forgotten too
  });

  describe('as a separate process', () => {
    let sinkProc: MailSinkProcess | undefined;
    after(async () => {
      await sinkProc?.stop();
    });

    it('arms hold-250 over HTTP; the lookup says delivered while the 250 is held', async () => {
      sinkProc = await startMailSinkProcess();
      const p = sinkProc;
      const remote = sendEmailTool({
        host: '127.0.0.1',
        port: p.smtpPort,
        from: 'bot@openworker.test',
        lookupUrl: p.lookupUrl,
      });
      await p.arm({ mode: 'hold-250' });
      await assert.rejects(p.arm({ mode: 'bogus' as never }), /HTTP 400/);
      const sending = track(Promise.resolve(remote.execute(mail, ctxFor('exec-proc-hold'))));
      await p.waitFor('holding', idOf('exec-proc-hold'));
      assert.equal(await p.deliveries(idOf('exec-proc-hold')), 1);
      assert.equal((await remote.reconcile!(mail, ctxFor('exec-proc-hold'))).status, 'applied');
      assert.equal(sending.settled, false, 'the client must still be waiting for the 250');
      assert.equal(await p.release(), 1);
      assert.match((await sending.promise).response ?? '', /^250/);
      await p.waitFor('released', idOf('exec-proc-hold'));
      const ledger = await p.ledger();
      assert.equal(ledger.messages.length, 1);
      assert.deepEqual(
        ledger.transactions.map((t) => t.outcome),
        ['held'],
      );
      assert.match(p.output(), /^MAILSINK stored exec-proc-hold@openworker-temporal$/m);
      await p.reset();
      assert.equal(await p.deliveries(idOf('exec-proc-hold')), 0);
      assert.deepEqual(await p.stop(), { code: 0, signal: null });
    });
  });
});
