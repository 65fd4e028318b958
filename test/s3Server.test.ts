import { strict as assert } from 'node:assert';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { startS3Server, type S3Server } from './support/s3Server';
import { s3RequestCounts } from '../bench/payloadStore';
import { contextStoreFor } from '../runtime/contextStore';
import { externalStorageFor } from '../runtime/payloadStorage';
import { settingsFrom } from '../runtime/settings';

// The test S3 server itself: a real SeaweedFS speaking S3 with signed requests, and gone after stop().

describe('test S3 server (SeaweedFS)', function () {
  this.timeout(60_000);
  let server: S3Server;
  let s3: S3Client;

  before(async function () {
    this.timeout(90_000);
    server = await startS3Server({ metrics: true });
    s3 = server.client();
  });
  after(async () => {
    s3?.destroy();
    await server?.stop();
  });

  it('stores, reads, heads and lists objects in a created bucket', async () => {
    await server.createBucket('claim-checks');
    const body = JSON.stringify({ hello: 'world', n: 42 });
    const put = await s3.send(
      new PutObjectCommand({ Bucket: 'claim-checks', Key: 'a/b.json', Body: body, ContentType: 'application/json' }),
    );
    assert.ok(put.ETag);

    const got = await s3.send(new GetObjectCommand({ Bucket: 'claim-checks', Key: 'a/b.json' }));
    assert.equal(await got.Body!.transformToString(), body);
    const head = await s3.send(new HeadObjectCommand({ Bucket: 'claim-checks', Key: 'a/b.json' }));
    assert.equal(head.ContentLength, Buffer.byteLength(body));
    assert.equal(head.ContentType, 'application/json');
    assert.equal(head.ETag, put.ETag);

    const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'claim-checks', Prefix: 'a/' }));
    assert.deepEqual(
      listed.Contents?.map((o) => o.Key),
      ['a/b.json'],
    );
    const buckets = await s3.send(new ListBucketsCommand({}));
    assert.ok(buckets.Buckets?.some((b) => b.Name === 'claim-checks'));
    await assert.rejects(
      s3.send(new HeadObjectCommand({ Bucket: 'claim-checks', Key: 'missing' })),
      (e: Error) => e.name === 'NotFound',
    );
  });

  it('rejects a request signed with the wrong secret', async () => {
    const wrong = server.client('not-the-secret');
    try {
      await assert.rejects(wrong.send(new ListBucketsCommand({})), (e: Error) => e.name === 'SignatureDoesNotMatch');
    } finally {
      wrong.destroy();
    }
  });

  it('a transcript segment is one PUT, with a prefix or without; a payload stored again is written again; one that is gone says what to do', async () => {
    await server.createBucket('segments');
    const settingsAt = (store: string) =>
      settingsFrom({
        OPENWORKER_PAYLOAD_STORE: store,
        OPENWORKER_ENCRYPTION: 'off',
        AWS_ENDPOINT_URL_S3: server.endpoint,
        AWS_REGION: server.region,
      });
    const settings = settingsAt('s3://segments/p');
    // The AWS SDK reads credentials from the process's environment (its default chain).
    const saved = { ...process.env };
    process.env.AWS_ACCESS_KEY_ID = server.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = server.secretAccessKey;
    try {
      const counts = async () => s3RequestCounts(await (await fetch(server.metricsUrl!)).text(), 'segments');
      // SeaweedFS publishes its counters as it serves: read until two reads agree (at most ~6 s).
      const settled = async () => {
        let last = await counts();
        for (let i = 0; i < 20; i++) {
          await new Promise((r) => setTimeout(r, 300));
          const now = await counts();
          if (now.put === last.put && now.getOrHead === last.getOrHead) return now;
          last = now;
        }
        throw new Error("SeaweedFS's request counters did not settle");
      };
      for (const [at, content] of [
        ['s3://segments/p', 'hello'],
        ['s3://segments', 'hello without a prefix'],
      ] as const) {
        const store = contextStoreFor(settingsAt(at));
        const before = await settled();
        const ref = await store.append(undefined, [{ role: 'user', content }], {
          namespace: 'default',
          sessionId: 's3-segments',
        });
        const after = await settled();
        assert.deepEqual([after.put - before.put, after.getOrHead - before.getOrHead], [1, 0], at);
        assert.deepEqual(await contextStoreFor(settingsAt(at)).read(ref), [{ role: 'user', content }], at);
      }
      // A large payload stored again is written again, unasked: a lifecycle rule counts its age from
      // the last PUT, and the run that stores it again reads it (#40).
      const driver = externalStorageFor(settings).drivers[0]!;
      const big = { metadata: {}, data: new Uint8Array(20_000).fill(7) };
      const target = { kind: 'workflow', namespace: 'default', id: 's3-segments' } as const;
      const start = await settled();
      await driver.store({ target }, [big]);
      const [claim] = await driver.store({ target }, [big]);
      const end = await settled();
      assert.deepEqual([end.put - start.put, end.getOrHead - start.getOrHead], [2, 0]);
      // An object that is gone: one line naming the object and what to do.
      await s3.send(new DeleteObjectCommand({ Bucket: 'segments', Key: `p/${claim!.claimData.key}` }));
      await assert.rejects(
        driver.retrieve({}, [claim!]),
        /key=v0\/.*prefix=p\].*NoSuchKey: .*restore it from a backup if `storage expire` deleted it .*OPENWORKER_PAYLOAD_STORE\)$/,
      );
    } finally {
      for (const k of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'] as const)
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
    }
  });

  it('stop() ends the server process', async () => {
    const pid = server.pid;
    await server.stop();
    assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
    await assert.rejects(s3.send(new ListBucketsCommand({}), { abortSignal: AbortSignal.timeout(5_000) }));
  });
});
