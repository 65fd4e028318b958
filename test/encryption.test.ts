import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { temporal } from '@temporalio/proto';
import { approve } from '../client/decisions';
import { inbox } from '../client/inspect';
import { turnStatus } from '../client/session';
import { messageIdFor } from '../activities/tools/sendEmail';
import { sessionWorkflowId, turnStatusQuery, turnWorkflowId } from '../workflows/definitions';
import { useWorld } from './support/world';
import { client, eventually, scripted, startTurn, uniq } from './support/scenario';

// Payload encryption end to end: a worker process and a client share a key; the server's history
// must hold ciphertext only, while both ends read plain values.

describe('payload encryption end to end', function () {
  this.timeout(90_000);
  const w = useWorld();
  const k1 = randomBytes(32).toString('base64');

  /** A client built while the given keys are in this process's environment. */
  async function clientWith(keys: string) {
    const before = process.env.OPENWORKER_ENCRYPTION_KEYS;
    process.env.OPENWORKER_ENCRYPTION_KEYS = keys;
    try {
      return await client(w.taskQueue);
    } finally {
      if (before === undefined) delete process.env.OPENWORKER_ENCRYPTION_KEYS;
      else process.env.OPENWORKER_ENCRYPTION_KEYS = before;
    }
  }

  it('history holds ciphertext only; the keyed client and worker see plain values; a wrong key gets a clear error', async () => {
    const sessionId = uniq('enc');
    const secret = `launch-code-${uniq('s')}`;
    await w.worker(
      scripted([
        {
          text: 'Sending.',
          toolCalls: [
            {
              id: 'c1',
              name: 'send_email',
              arguments: { to: 'bob@example.com', subject: 'Plan', body: `the ${secret}` },
            },
          ],
        },
        { text: `Sent the ${secret}.` },
      ]),
      { env: { OPENWORKER_ENCRYPTION_KEYS: `k1=${k1}` } },
    );
    const keyed = await clientWith(`k1=${k1}`);
    try {
      const parked = await startTurn(keyed, sessionId, `email bob the ${secret}`);
      assert.equal(parked.state, 'awaiting_approval');
      assert.equal((parked.ledger[0]!.arguments as { body: string }).body, `the ${secret}`);
      assert.equal((await approve(keyed, { sessionId, toolCallId: 'c1', by: 'alice' })).outcome, 'applied');
      const done = await eventually(async () => {
        const s = await turnStatus(keyed, parked.workflowId);
        return s.closed && s;
      }, 'turn completes');
      assert.equal(done.text, `Sent the ${secret}.`);
      const sent = done.ledger[0]!;
      assert.equal(w.sink.deliveries(messageIdFor(sent.executionId)), 1);
      assert.ok(
        w.sink.messages().some((m) => JSON.stringify(m).includes(secret)),
        'the email itself carries the plain text',
      );

      for (const id of [turnWorkflowId(sessionId, 1), sessionWorkflowId(sessionId)]) {
        const history = await w.c.client.workflow.getHandle(id).fetchHistory();
        const bytes = Buffer.from(temporal.api.history.v1.History.encode(history).finish()).toString('latin1');
        assert.ok(!bytes.includes(secret), `${id}: the secret is in the server's history`);
        assert.ok(!bytes.includes('bob@example.com'), `${id}: the recipient is in the server's history`);
        assert.ok(
          bytes.includes('binary/openworker-encrypted') && bytes.includes('k1'),
          `${id}: payloads are sealed and name their key`,
        );
      }

      const wrongKey = await clientWith(`k2=${randomBytes(32).toString('base64')}`);
      try {
        await assert.rejects(
          () => wrongKey.client.workflow.getHandle(parked.workflowId).query(turnStatusQuery),
          /encrypted with key 'k1', which this process does not have \(it has k2/,
        );
      } finally {
        await wrongKey.close();
      }
    } finally {
      await keyed.close();
    }
  });

  it("a tool's failure message is sealed too: history holds 'Encoded failure', the keyed client reads the real one", async () => {
    // An SMTP port nobody listens on: the send fails before anything is sent, with a message that
    // names the server (a real one would often quote the recipient).
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r));
    await w.worker(
      scripted([
        {
          toolCalls: [
            { id: 'c1', name: 'send_email', arguments: { to: 'carol@example.com', subject: 'Plan', body: 'hi' } },
          ],
        },
        { text: 'It failed.' },
      ]),
      {
        env: { OPENWORKER_ENCRYPTION_KEYS: `k1=${k1}`, OPENWORKER_SMTP_PORT: String(port) },
      },
    );
    const keyed = await clientWith(`k1=${k1}`);
    try {
      const sessionId = uniq('enc-fail');
      const parked = await startTurn(keyed, sessionId, 'email carol');
      // A process without the key must not report an empty inbox: it says it cannot read the turn.
      const unreadable = await eventually(
        () =>
          inbox(w.c, { sessionId }).then(
            () => undefined,
            (err: Error) => err,
          ),
        'the keyless inbox fails',
      );
      assert.match(
        unreadable.message,
        /^1 waiting turn\(s\) could not be read, e\.g\. session-enc-fail-\S+-turn-1: .*key 'k1'/,
      );
      assert.equal((await approve(keyed, { sessionId, toolCallId: 'c1', by: 'alice' })).outcome, 'applied');
      const done = await eventually(async () => {
        const s = await turnStatus(keyed, parked.workflowId);
        return s.closed && s;
      }, 'turn completes');
      assert.match(
        done.ledger[0]!.error ?? '',
        new RegExp(`email not sent: could not connect to SMTP server 127\\.0\\.0\\.1:${port}`),
      );
      const history = await w.c.client.workflow.getHandle(parked.workflowId).fetchHistory();
      const failures = (history.events ?? [])
        .map((e) => e.activityTaskFailedEventAttributes?.failure)
        .filter((f) => !!f);
      assert.ok(failures.length >= 1, 'the activity failed');
      for (const f of failures) {
        assert.equal(f.message, 'Encoded failure');
        assert.equal(
          Buffer.from(f.encodedAttributes?.metadata?.encoding ?? []).toString(),
          'binary/openworker-encrypted',
        );
      }
      const bytes = Buffer.from(temporal.api.history.v1.History.encode(history).finish()).toString('latin1');
      assert.ok(
        !bytes.includes('could not connect') && !bytes.includes(`:${port}`),
        'the failure message is not in the server history',
      );
    } finally {
      await keyed.close();
    }
  });
});
