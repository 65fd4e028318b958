import { strict as assert } from 'node:assert';
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { startS3Server, type S3Server } from './support/s3Server';

// The test S3 server itself: a real SeaweedFS speaking S3 with signed requests, and gone after stop().

describe('test S3 server (SeaweedFS)', function () {
  this.timeout(60_000);
  let server: S3Server;
  let s3: S3Client;

  before(async function () {
    this.timeout(90_000);
    server = await startS3Server();
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

  it('stop() ends the server process', async () => {
    const pid = server.pid;
    await server.stop();
    assert.throws(() => process.kill(pid, 0), { code: 'ESRCH' });
    await assert.rejects(s3.send(new ListBucketsCommand({}), { abortSignal: AbortSignal.timeout(5_000) }));
  });
});
