import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';
import { approve } from '../client/decisions';
import { sessionWorkflowId } from '../workflows/definitions';
import { startFakeModelServer } from './support/fakeModelServer';
import { testServer } from './support/hooks';
import { spawnWorker } from './support/processes';
import { client, emailCall, startTurn, turnClosed, uniq } from './support/scenario';

// Secrets hygiene: the SMTP password and the model API key are used (the SMTP server checks the
// login, the model server sees the key in its Authorization header) and appear nowhere else: not
// in the raw histories, not in the payload store, not in the worker's debug logs or the server's
// log, not in anything sent to the model, not in a failure message.

/** A raw history (`temporal workflow show --output json`) with every payload's base64 decoded alongside. */
function withPayloadsDecoded(json: string): string {
  const decoded: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'data' && typeof x === 'string') decoded.push(Buffer.from(x, 'base64').toString('utf8'));
        else walk(x);
      }
    }
  };
  walk(JSON.parse(json));
  return `${json}\n${decoded.join('\n')}`;
}

/** Every file under `dir`, read as text. */
function filesUnder(dir: string): string {
  if (!existsSync(dir)) return '';
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((f) => path.join(dir, f))
    .filter((f) => statSync(f).isFile())
    .map((f) => readFileSync(f, 'latin1'))
    .join('\n');
}

describe('secrets hygiene', function () {
  this.timeout(120_000);

  it('the SMTP password and the model API key reach only their servers', async () => {
    const smtpPass = `smtp-pass-${randomBytes(12).toString('hex')}`;
    const apiKey = `sk-test-${randomBytes(12).toString('hex')}`;
    const logins: string[] = [];
    const received: string[] = [];
    const smtp = new SMTPServer({
      authOptional: false,
      allowInsecureAuth: true,
      disabledCommands: ['STARTTLS'],
      logger: false,
      onAuth: (auth, _s, cb) =>
        auth.username === 'mailer' && auth.password === smtpPass
          ? (logins.push(auth.username), cb(null, { user: 'mailer' }))
          : cb(new Error('bad login')),
      onRcptTo: (address, _s, cb) =>
        cb(
          address.address.startsWith('nobody@')
            ? Object.assign(new Error('Mailbox unavailable'), { responseCode: 550 })
            : undefined,
        ),
      onData: (stream, _s, cb) => {
        let text = '';
        stream.on('data', (d: Buffer) => (text += d.toString()));
        stream.on('end', () => (received.push(text), cb()));
      },
    });
    await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', () => r()));
    const fake = await startFakeModelServer();
    const taskQueue = uniq('tq-secrets');
    const c = await client(taskQueue);
    try {
      const worker = await spawnWorker({
        taskQueue,
        model: `openai-compatible:fake-model@${fake.url}`,
        env: {
          OPENWORKER_SMTP_HOST: '127.0.0.1',
          OPENWORKER_SMTP_PORT: String((smtp.server.address() as AddressInfo).port),
          OPENWORKER_SMTP_USER: 'mailer',
          OPENWORKER_SMTP_PASS: smtpPass,
          OPENAI_COMPATIBLE_API_KEY: apiKey,
          OPENWORKER_LOG_LEVEL: 'DEBUG',
        },
      });
      const email = (id: string, to?: string) =>
        emailCall(id, to, { subject: 'Quarterly numbers', body: 'See attached.' });
      fake.enqueue(
        { toolCalls: [email('c1', 'ann@example.com'), email('c2', 'nobody@example.com')] },
        { text: 'one sent, one refused' },
      );
      const sessionId = uniq('secrets');
      const t = await startTurn(c, sessionId, 'send the numbers to ann and nobody');
      for (const id of ['c1', 'c2'])
        assert.equal((await approve(c, { sessionId, toolCallId: id, by: 'alice' })).outcome, 'applied');
      const done = await turnClosed(c, t);
      assert.equal(done.state, 'completed', done.error);
      assert.equal(done.ledger.find((e) => e.toolCallId === 'c1')!.state, 'succeeded');
      assert.match(done.ledger.find((e) => e.toolCallId === 'c2')!.error ?? '', /550/, 'the refusal is reported');
      // Used: the login succeeded with the password, and the key went to the model server.
      assert.ok(logins.length >= 1 && received.length === 1, `logins ${logins.length}, messages ${received.length}`);
      assert.ok(
        fake.requests.length >= 2 && fake.requests.every((r) => r.headers.authorization === `Bearer ${apiKey}`),
      );

      const cli = testServer().cliPath;
      const raw = (id: string) =>
        execFileSync(
          cli,
          ['workflow', 'show', '--workflow-id', id, '--output', 'json', '--address', testServer().address],
          { encoding: 'utf8', timeout: 20_000 },
        );
      const places: [string, string][] = [
        ['the turn history', withPayloadsDecoded(raw(t.workflowId))],
        ['the session history', withPayloadsDecoded(raw(sessionWorkflowId(sessionId)))],
        ['the payload store', filesUnder(process.env.OPENWORKER_PAYLOAD_STORE!)],
        ['the worker log (DEBUG)', worker.output()],
        ['the Temporal server log', readFileSync(testServer().logFile, 'utf8')],
        ['what the model was sent', JSON.stringify(fake.requests.map((r) => r.body))],
        ['the turn result', JSON.stringify(done)],
      ];
      // The search covers real data: the histories hold the recipient, the model saw the refusal.
      assert.match(places[0]![1], /ann@example\.com/);
      assert.match(places[5]![1], /550/);
      for (const [where, text] of places) {
        for (const [name, secret] of [
          ['SMTP password', smtpPass],
          ['API key', apiKey],
        ]) {
          assert.ok(!text.includes(secret!), `the ${name} appears in ${where}`);
          assert.ok(
            !text.includes(Buffer.from(secret!).toString('base64')),
            `the ${name} appears base64-encoded in ${where}`,
          );
        }
      }
    } finally {
      await c.close();
      await fake.close();
      await new Promise<void>((r) => smtp.close(() => r()));
    }
  });
});
