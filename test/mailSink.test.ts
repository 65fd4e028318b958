import { strict as assert } from 'node:assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { ToolFailure } from '../activities/tool';
import { sendEmailTool, smtpConfigFromEnv, type SmtpConfig } from '../activities/tools/sendEmail';
import { startMailSink, type MailSink, type MailSinkOptions } from '../dev/mailSink';
import { ctxFor, mail, rejectsWith } from './support/sendEmailCall';

// The sink's runtime faults (hold-250, hold-commit, ...) are in test/mailSinkFaults.test.ts.

const ID1 = '<exec-test-1@openworker-temporal>';

/** A port that refuses connections: a server that listened there and closed. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('mail sink and send_email', function () {
  this.timeout(20_000);
  const sinks: MailSink[] = [];
  let tmp: string;

  async function sink(options: MailSinkOptions = {}): Promise<MailSink> {
    const s = await startMailSink(options);
    sinks.push(s);
    return s;
  }
  const configFor = (s: MailSink, extra: Partial<SmtpConfig> = {}): SmtpConfig => ({
    host: '127.0.0.1',
    port: s.smtpPort,
    from: 'bot@openworker.test',
    lookupUrl: s.lookupUrl,
    ...extra,
  });

  before(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'mail-sink-test-'));
  });
  after(async () => {
    await Promise.all(sinks.map((s) => s.close()));
    await rm(tmp, { recursive: true, force: true });
  });

  describe('against a healthy sink', () => {
    let s: MailSink;
    let tool: ReturnType<typeof sendEmailTool>;
    before(async () => {
      s = await sink();
      tool = sendEmailTool(configFor(s));
    });

    it('declares an approved external tool that reconciles when a lookup URL is set', () => {
      assert.equal(tool.name, 'send_email');
      assert.equal(tool.effect, 'external');
      assert.equal(tool.requiresApproval, true);
      assert.equal(tool.recovery, 'reconcile');
      assert.equal(tool.target?.(mail), 'alice@example.com');
      assert.equal(tool.input.safeParse({ ...mail, to: 'not-an-address' }).success, false);
      assert.equal(sendEmailTool({ host: 'h', port: 25, from: 'a@b.c' }).recovery, 'manual');
    });

    it('delivers once under the Message-ID derived from the execution ID', async () => {
      const result = await tool.execute(mail, ctxFor('exec-test-1'));
      assert.equal(result.messageId, ID1);
      assert.deepEqual(result.accepted, ['alice@example.com']);
      assert.deepEqual(result.rejected, []);
      assert.match(result.response ?? '', /^250/);
      assert.equal(s.deliveries(ID1), 1);
      const [stored] = s.messages();
      assert.equal(stored.messageId, 'exec-test-1@openworker-temporal');
      assert.equal(stored.subject, mail.subject);
      assert.equal(stored.text.trim(), mail.body);
      assert.deepEqual(stored.to, ['alice@example.com']);

      for (const id of [ID1, 'exec-test-1@openworker-temporal']) {
        const res = await fetch(`${s.lookupUrl}/${encodeURIComponent(id)}`);
        assert.equal(res.status, 200);
        const body = (await res.json()) as { delivered: boolean; count: number; message: { subject: string } };
        assert.equal(body.delivered, true);
        assert.equal(body.count, 1);
        assert.equal(body.message.subject, mail.subject);
      }
      const missing = await fetch(`${s.lookupUrl}/${encodeURIComponent('<nope@x>')}`);
      assert.equal(missing.status, 404);
      assert.deepEqual(await missing.json(), { delivered: false });
      const list = (await (await fetch(s.lookupUrl)).json()) as { messages: unknown[] };
      assert.equal(list.messages.length, 1);
      assert.equal((await fetch(s.lookupUrl.replace('/messages', '/health'))).status, 200);
    });

    it('counts a second send with the same execution ID as a second delivery', async () => {
      await tool.execute(mail, ctxFor('exec-test-1'));
      assert.equal(s.deliveries(ID1), 2);
    });

    it('reconciles: applied for a sent ID, not_applied for an unknown one', async () => {
      const applied = await tool.reconcile!(mail, ctxFor('exec-test-1'));
      assert.deepEqual(applied, {
        status: 'applied',
        result: { messageId: ID1, accepted: ['alice@example.com'], reconciled: true },
      });
      assert.deepEqual(await tool.reconcile!(mail, ctxFor('exec-never-sent')), { status: 'not_applied' });
    });

    it('reports partially rejected recipients without failing', async () => {
      const picky = await sink({ rejectRecipients: ['bob@example.com'] });
      const result = await sendEmailTool(configFor(picky)).execute(
        { ...mail, cc: ['bob@example.com'] },
        ctxFor('exec-partial'),
      );
      assert.deepEqual(result.accepted, ['alice@example.com']);
      assert.deepEqual(result.rejected, ['bob@example.com']);
    });

    it('fails definitely when cancelled before sending or when SMTP is not configured', async () => {
      const aborted = new AbortController();
      aborted.abort();
      const err = await rejectsWith(Promise.resolve(tool.execute(mail, ctxFor('exec-aborted', aborted.signal))));
      assert.ok(err instanceof ToolFailure, err.message);
      const off = await rejectsWith(Promise.resolve(sendEmailTool(undefined).execute(mail, ctxFor('exec-off'))));
      assert.ok(off instanceof ToolFailure);
      assert.equal(off.message, 'SMTP is not configured: set OPENWORKER_SMTP_HOST');
    });
  });

  describe('failures', () => {
    it('connection refused → ToolFailure', async () => {
      const config: SmtpConfig = { host: '127.0.0.1', port: await closedPort(), from: 'bot@openworker.test' };
      const err = await rejectsWith(Promise.resolve(sendEmailTool(config).execute(mail, ctxFor('exec-refused'))));
      assert.ok(err instanceof ToolFailure, err.message);
      assert.match(err.message, /could not connect.*ECONNREFUSED/);
    });

    it('all recipients rejected at RCPT TO → ToolFailure, nothing stored', async () => {
      const s = await sink({ rejectRecipients: ['alice@example.com'] });
      const err = await rejectsWith(Promise.resolve(sendEmailTool(configFor(s)).execute(mail, ctxFor('exec-rcpt'))));
      assert.ok(err instanceof ToolFailure, err.message);
      assert.match(err.message, /recipients were rejected.*550/);
      assert.equal(s.messages().length, 0);
    });

    it('451 to the end of DATA (not stored) → unknown outcome, reconcile says not_applied', async () => {
      const s = await sink({ failData: { code: 451, afterStore: false } });
      const tool = sendEmailTool(configFor(s));
      const err = await rejectsWith(Promise.resolve(tool.execute(mail, ctxFor('exec-451'))));
      assert.ok(!(err instanceof ToolFailure), `expected an unknown outcome, got ToolFailure: ${err.message}`);
      assert.match(err.message, /outcome unknown.*451/);
      assert.equal(s.deliveries('<exec-451@openworker-temporal>'), 0);
      assert.deepEqual(await tool.reconcile!(mail, ctxFor('exec-451')), { status: 'not_applied' });
    });

    it('554 to the end of DATA after storing → unknown outcome, reconcile says applied', async () => {
      const s = await sink({ failData: { code: 554, afterStore: true } });
      const tool = sendEmailTool(configFor(s));
      const err = await rejectsWith(Promise.resolve(tool.execute(mail, ctxFor('exec-554'))));
      assert.ok(!(err instanceof ToolFailure), `expected an unknown outcome, got ToolFailure: ${err.message}`);
      assert.equal(s.deliveries('<exec-554@openworker-temporal>'), 1);
      assert.equal((await tool.reconcile!(mail, ctxFor('exec-554'))).status, 'applied');
    });

    it('connection dropped after DATA → unknown outcome', async () => {
      const s = await sink({ dropAfterData: true });
      const err = await rejectsWith(Promise.resolve(sendEmailTool(configFor(s)).execute(mail, ctxFor('exec-drop'))));
      assert.ok(!(err instanceof ToolFailure), `expected an unknown outcome, got ToolFailure: ${err.message}`);
      assert.match(err.message, /outcome unknown: the connection was lost/);
      assert.equal(s.deliveries('<exec-drop@openworker-temporal>'), 1);
    });

    it('cancelled while waiting for the reply to DATA → unknown outcome', async () => {
      const s = await sink({ delayDataReplyMs: 5_000 });
      const controller = new AbortController();
      const sending = rejectsWith(
        Promise.resolve(sendEmailTool(configFor(s)).execute(mail, ctxFor('exec-cancel', controller.signal))),
      );
      while (s.deliveries('<exec-cancel@openworker-temporal>') === 0) await new Promise((r) => setTimeout(r, 10));
      controller.abort();
      const err = await sending;
      assert.ok(!(err instanceof ToolFailure), `expected an unknown outcome, got ToolFailure: ${err.message}`);
      assert.match(err.message, /outcome unknown: the send was cancelled/);
    });

    it('reconcile against a dead lookup URL or a non-lookup 404 → unknown', async () => {
      const dead = sendEmailTool({
        host: '127.0.0.1',
        port: 25,
        from: 'a@b.c',
        lookupUrl: `http://127.0.0.1:${await closedPort()}/messages`,
      });
      const answer = await dead.reconcile!(mail, ctxFor('exec-test-1'));
      assert.equal(answer.status, 'unknown');
      const s = await sink();
      const wrongPath = sendEmailTool(configFor(s, { lookupUrl: s.lookupUrl.replace('/messages', '/nothing') }));
      assert.equal((await wrongPath.reconcile!(mail, ctxFor('exec-test-1'))).status, 'unknown');
    });
  });

  it('keeps messages in its file across restarts', async () => {
    const file = path.join(tmp, 'sink.json');
    const first = await sink({ file });
    await sendEmailTool(configFor(first)).execute(mail, ctxFor('exec-persist'));
    await first.close();
    const second = await sink({ file });
    assert.equal(second.deliveries('<exec-persist@openworker-temporal>'), 1);
    assert.equal(second.messages().length, 1);
  });

  describe('smtpConfigFromEnv', () => {
    const base = { OPENWORKER_SMTP_HOST: 'smtp.example.com' };
    const cases: Array<[string, NodeJS.ProcessEnv, Partial<SmtpConfig> | undefined | RegExp]> = [
      ['no host → undefined', {}, undefined],
      ['blank host → undefined', { OPENWORKER_SMTP_HOST: '  ' }, undefined],
      ['defaults', base, { host: 'smtp.example.com', port: 587, secure: false, from: 'openworker@localhost' }],
      ['secure → 465', { ...base, OPENWORKER_SMTP_SECURE: 'true' }, { port: 465, secure: true }],
      [
        'secure=1 with explicit port',
        { ...base, OPENWORKER_SMTP_SECURE: '1', OPENWORKER_SMTP_PORT: '2465' },
        { port: 2465, secure: true },
      ],
      [
        'all fields',
        {
          ...base,
          OPENWORKER_SMTP_USER: 'u',
          OPENWORKER_SMTP_PASS: 'p w',
          OPENWORKER_SMTP_FROM: 'Bot <bot@x.y>',
          OPENWORKER_SMTP_LOOKUP_URL: 'http://127.0.0.1:1/messages',
        },
        { user: 'u', pass: 'p w', from: 'Bot <bot@x.y>', lookupUrl: 'http://127.0.0.1:1/messages' },
      ],
      ['bad port', { ...base, OPENWORKER_SMTP_PORT: 'abc' }, /^OPENWORKER_SMTP_PORT must be a port number/],
      ['port out of range', { ...base, OPENWORKER_SMTP_PORT: '70000' }, /OPENWORKER_SMTP_PORT/],
      ['bad secure flag', { ...base, OPENWORKER_SMTP_SECURE: 'yes' }, /OPENWORKER_SMTP_SECURE/],
      ['password without user', { ...base, OPENWORKER_SMTP_PASS: 'hunter2' }, /OPENWORKER_SMTP_USER/],
      ['bad lookup URL', { ...base, OPENWORKER_SMTP_LOOKUP_URL: 'ftp://x' }, /OPENWORKER_SMTP_LOOKUP_URL/],
      [
        'manual with a lookup (a person decides, a retry asks)',
        { ...base, OPENWORKER_SMTP_LOOKUP_URL: 'http://127.0.0.1:1/messages', OPENWORKER_SMTP_RECOVERY: 'manual' },
        { recovery: 'manual', lookupUrl: 'http://127.0.0.1:1/messages' },
      ],
      ['bad recovery', { ...base, OPENWORKER_SMTP_RECOVERY: 'idempotent' }, /^OPENWORKER_SMTP_RECOVERY must be/],
      [
        'reconcile without a lookup',
        { ...base, OPENWORKER_SMTP_RECOVERY: 'reconcile' },
        /OPENWORKER_SMTP_RECOVERY=reconcile needs OPENWORKER_SMTP_LOOKUP_URL/,
      ],
    ];
    it('manual with a lookup: send_email parks for a person and keeps reconcile() for a retry', () => {
      const lookupUrl = 'http://127.0.0.1:1/messages';
      const tool = sendEmailTool({ host: 'h', port: 25, from: 'f@x.y', lookupUrl, recovery: 'manual' });
      assert.deepEqual([tool.recovery, typeof tool.reconcile], ['manual', 'function']);
      assert.equal(sendEmailTool({ host: 'h', port: 25, from: 'f@x.y', lookupUrl }).recovery, 'reconcile');
    });
    for (const [name, env, expected] of cases) {
      it(name, () => {
        if (expected instanceof RegExp) {
          assert.throws(
            () => smtpConfigFromEnv(env),
            (err: Error) =>
              expected.test(err.message) && !err.message.includes('\n') && !err.message.includes('hunter2'),
          );
        } else if (expected === undefined) {
          assert.equal(smtpConfigFromEnv(env), undefined);
        } else {
          const config = smtpConfigFromEnv(env);
          assert.ok(config);
          for (const [key, value] of Object.entries(expected))
            assert.deepEqual(config[key as keyof SmtpConfig], value, key);
        }
      });
    }
  });

  describe('mailSinkMain as a separate process', () => {
    let child: ChildProcess | undefined;
    after(() => {
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });

    it('prints a ready line, accepts mail, exits on SIGTERM', async () => {
      const main = path.join(__dirname, '..', 'dev', 'mailSinkMain.js');
      child = spawn(process.execPath, [main, '--smtp-port', '0', '--http-port=0'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const proc = child;
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        proc.once('exit', (code, signal) => resolve({ code, signal })),
      );
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: proc.stdout! }).once('line', resolve);
        proc.once('exit', (code) => reject(new Error(`mailSinkMain exited early with code ${code}`)));
      });
      const ready = JSON.parse(line) as { smtpPort: number; httpPort: number; lookupUrl: string };
      assert.equal(ready.lookupUrl, `http://127.0.0.1:${ready.httpPort}/messages`);
      const tool = sendEmailTool({
        host: '127.0.0.1',
        port: ready.smtpPort,
        from: 'bot@openworker.test',
        lookupUrl: ready.lookupUrl,
      });
      await tool.execute(mail, ctxFor('exec-child'));
      assert.equal((await tool.reconcile!(mail, ctxFor('exec-child'))).status, 'applied');
      proc.kill('SIGTERM');
      assert.deepEqual(await exited, { code: 0, signal: null });
    });
  });
});
