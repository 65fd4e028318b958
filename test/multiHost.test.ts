import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { connectClient } from '../client/connection';
import { approve } from '../client/decisions';
import { turnStatus } from '../client/session';
import { messageIdFor } from '../activities/tools/sendEmail';
import { newCodecToken, startCodecServer } from '../apps/codecServer';
import { endpointCodec } from '../runtime/dataConverter';
import { startDevServer } from '../dev/server';
import { launchBrowser, pageText, requireChromium, shot } from './support/browser';
import { startS3Server, type S3Server } from './support/s3Server';
import { runCli } from './support/processes';
import { eventually, scripted, startTurn, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Hosts as processes that share nothing but the network: each has its own state dir and HOME, no
// payload directory, encryption keys from the environment and payloads in a real S3 server
// (SeaweedFS). A protected call dispatched on worker A, A SIGKILLed, worker B finishes the turn.

const BUCKET = 'openworker-payloads';
const PREFIX = 'prod/eu';
const SECRET = 'quarterly numbers, do not forward';

describe('several hosts: payloads in S3, no shared disk', function () {
  this.timeout(180_000);
  let s3: S3Server;
  let root: string;
  const saved: Record<string, string | undefined> = {};
  const keys = `k1=${randomBytes(32).toString('base64')}`;

  const shared = (): Record<string, string> => ({
    OPENWORKER_PAYLOAD_STORE: `s3://${BUCKET}/${PREFIX}`,
    AWS_ENDPOINT_URL_S3: s3.endpoint,
    AWS_ACCESS_KEY_ID: s3.accessKeyId,
    AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
    AWS_REGION: s3.region,
    OPENWORKER_ENCRYPTION_KEYS: keys,
  });
  const host = (name: string): Record<string, string> => ({
    ...shared(),
    OPENWORKER_STATE_DIR: join(root, name, 'state'),
    HOME: join(root, name, 'home'),
    OPENWORKER_KEYS_DIR: join(root, name, 'home', '.openworker', 'keys'),
  });

  // The test process is host C: its client (made in useWorld's beforeEach) sees only what the hosts see.
  before(async function () {
    this.timeout(90_000);
    s3 = await startS3Server();
    await s3.createBucket(BUCKET);
    root = mkdtempSync(join(tmpdir(), 'openworker-hosts-'));
    for (const [k, v] of Object.entries(host('c'))) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
  });
  after(async () => {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    await s3?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  });
  const w = useWorld();

  it('worker B finishes a turn worker A dispatched, a third host reads it all, no host wrote a payload to disk', async () => {
    const sessionId = uniq('hosts');
    const long = `${SECRET}. ${'The full context of the report, paragraph after paragraph. '.repeat(400)}`;
    assert.ok(long.length > 16 * 1024);
    const script = scripted([
      {
        toolCalls: [
          { id: 'm1', name: 'send_email', arguments: { to: 'bob@example.com', subject: 'Report', body: 'Attached.' } },
        ],
      },
      { text: 'Sent.' },
    ]);
    const a = await w.worker(script, { env: host('a'), reconcile: true, faults: 'tool.after_execute@send_email' });
    const parked = await startTurn(w.c, sessionId, long);
    assert.equal(parked.state, 'awaiting_approval');

    // Host D, a CLI that never saw the session: the inbox and the whole transcript, from S3.
    const cli = (args: string[]) => runCli(['--json', ...args, '--task-queue', w.taskQueue], { env: host('d') });
    const inbox = await cli(['inbox', '--session', sessionId]);
    assert.equal(inbox.code, 0, inbox.stderr);
    const listed = JSON.parse(inbox.stdout) as {
      calls: { toolCallId: string; state: string }[];
      unreadable: unknown[];
    };
    assert.deepEqual(
      listed.calls.map((i) => [i.toolCallId, i.state]),
      [['m1', 'awaiting_approval']],
    );
    assert.deepEqual(listed.unreadable, []);

    await approve(w.c, { sessionId, toolCallId: 'm1', by: 'alice' });
    const executionId = await a.faultReached('tool.after_execute');
    assert.equal(w.sink.deliveries(messageIdFor(executionId)), 1, 'the email went out on host A');
    await a.kill('SIGKILL');
    await w.worker(script, { env: host('b'), reconcile: true });
    const done = await eventually(
      async () => {
        const s = await turnStatus(w.c, parked.workflowId);
        return s.closed && s;
      },
      'worker B finishes the turn',
      90_000,
    );
    assert.equal(done.state, 'completed');
    assert.equal(done.ledger[0]!.state, 'succeeded');
    assert.equal(done.ledger[0]!.runs, 1, 'reconciled, not sent again');
    assert.equal(w.sink.deliveries(messageIdFor(executionId)), 1, 'one approval, one email');

    const show = await cli(['show', sessionId]);
    assert.equal(show.code, 0, show.stderr);
    const view = JSON.parse(show.stdout) as { transcript: { role: string; content: unknown }[] };
    assert.equal(view.transcript.find((m) => m.role === 'user')?.content, long, 'the whole transcript');

    // What went to S3 is under the prefix and sealed; no host kept a payload on its disk.
    const bucket = s3.client();
    try {
      const listed = await bucket.send(new ListObjectsV2Command({ Bucket: BUCKET }));
      const objectKeys = (listed.Contents ?? []).map((o) => o.Key!);
      assert.ok(objectKeys.length >= 2, `stored: ${objectKeys.join(', ')}`);
      for (const key of objectKeys) {
        assert.match(key, new RegExp(`^${PREFIX}/v0/ns/default/`), key);
        const body = await bucket.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
        assert.ok(!Buffer.from(await body.Body!.transformToByteArray()).includes(SECRET), `${key} is ciphertext`);
      }
    } finally {
      bucket.destroy();
    }
    for (const name of ['a', 'b', 'c', 'd'])
      assert.ok(!existsSync(join(root, name, 'state', 'payloads')), `host ${name} has no payload directory`);
  });

  it('a client without the S3 settings fails with one line that names the store', async () => {
    const sessionId = uniq('hosts-wrong');
    await w.worker(scripted([{ text: 'ok' }]), { env: host('a') });
    await startTurn(w.c, sessionId, 'x'.repeat(20_000));
    const res = await runCli(['show', sessionId, '--task-queue', w.taskQueue], {
      env: { ...host('e'), AWS_SECRET_ACCESS_KEY: 'wrong-secret-wrong-secret' },
    });
    assert.notEqual(res.code, 0);
    assert.equal(res.stderr.trim().split('\n').length, 1, res.stderr);
    assert.match(
      res.stderr,
      /S3StorageDriver retrieve failed \[bucket=openworker-payloads, key=v0\/ns\/default\/.*SignatureDoesNotMatch/,
    );
  });

  it('the Web UI shows a transcript stored in S3, resolved by the codec endpoint', async function () {
    requireChromium(this);
    const dir = mkdtempSync(join(tmpdir(), 'openworker-hosts-ui-'));
    // `dev`'s wiring: the codec endpoint reads the store and keys from the same settings as a worker.
    const codec = await startCodecServer({ codec: endpointCodec(host('ui')), token: newCodecToken() });
    const server = await startDevServer({ port: 0, dbFile: join(dir, 'temporal.db'), codecEndpoint: codec.uiEndpoint });
    const browser = await launchBrowser();
    const c = await connectClient({ taskQueue: w.taskQueue, address: server.address });
    try {
      await w.worker(scripted([{ text: 'Read it.' }]), { env: host('a'), address: server.address });
      const long = `${SECRET} ${uniq('marker')}. ${'More of the stored report. '.repeat(800)}`;
      const done = await startTurn(c, uniq('hosts-ui'), long);
      assert.equal(done.state, 'completed');
      const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
      try {
        await page.goto(`${server.uiUrl!}/namespaces/default/workflows/${done.workflowId}`);
        await pageText(page, new RegExp(long.slice(0, 60)), 'the stored transcript on the turn page');
        await shot(page, 'webui-s3-transcript');
      } finally {
        await page.close();
      }
    } finally {
      await c.close();
      await browser.close();
      await server.stop();
      await codec.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
