import {
  GetBucketLifecycleConfigurationCommand,
  PutBucketLifecycleConfigurationCommand,
  S3Client,
  type LifecycleRule,
} from '@aws-sdk/client-s3';
import type { StorageDriver } from '@temporalio/common';
import type { Env } from './config';
import { missingAdvice } from './payloadStorage';
import { S3StorageDriver, type S3StorageDriverClient } from '@temporalio/external-storage-s3';
import { AwsSdkS3StorageDriverClient } from '@temporalio/external-storage-s3-aws-sdk';

/**
 * Payloads in S3 or an S3-compatible store, through the SDK's own S3 driver (its wire format is
 * what Temporal's other SDKs read). Credentials and region come from the AWS SDK's standard chain;
 * `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL` points it at another S3-compatible server, which then
 * gets path-style addressing (most of them need it) and region us-east-1 unless one is set.
 */
export function s3Client(env: Env): S3Client {
  const endpoint = env.AWS_ENDPOINT_URL_S3?.trim() || env.AWS_ENDPOINT_URL?.trim() || undefined;
  const region = env.AWS_REGION?.trim() || env.AWS_DEFAULT_REGION?.trim() || (endpoint ? 'us-east-1' : undefined);
  return new S3Client({
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    ...(region ? { region } : {}),
  });
}

export function s3Driver(c: { bucket: string; prefix: string }, env: Env): StorageDriver {
  const s3 = s3Client(env);
  const driver = new S3StorageDriver({
    client: wrapped(new AwsSdkS3StorageDriverClient(s3), c.prefix),
    bucket: c.bucket,
  });
  return {
    name: driver.name,
    type: driver.type,
    store: (ctx, payloads) => withCause(driver.store(ctx, payloads)),
    retrieve: (ctx, claims) => withCause(driver.retrieve(ctx, claims)),
  };
}

// The driver's key is `v0/ns/…/d/sha256/<hash>`, with no room for a prefix: the prefix is the
// deployment's, added on the way to S3, so every client and worker must be given the same one.
// The driver asks before each PUT whether the object exists (a HEAD) and skips the PUT if it does;
// answering no without asking makes every store a PUT. Two reasons: a lifecycle rule counts an
// object's age from its last PUT, so an object reused by a later run (the same bytes under the
// same key: a workflow ID without a run ID, a session's segments after continue-as-new) must be
// written again or `storage expire` deletes what that run reads; and most payloads are new, so the
// question cost a request of its own (npm run bench -- --payloads s3: 2 of a model call's 2
// requests, ~3 ms of worker CPU each). A reused payload's bytes are sent again.
function wrapped(client: S3StorageDriverClient, prefix: string): S3StorageDriverClient {
  const at = (key: string) => (prefix ? `${prefix}/${key}` : key);
  return {
    putObject: (bucket, key, data, o) => client.putObject(bucket, at(key), data, o),
    objectExists: async () => false,
    getObject: (bucket, key, o) => client.getObject(bucket, at(key), o),
    describe: () => ({ ...client.describe?.(), ...(prefix ? { prefix } : {}) }),
  };
}

// The driver names the object and keeps S3's answer as the cause; one line should say both, and
// for an object that is gone, what to do.
async function withCause<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    const cause = (err as Error).cause as { name?: string; message?: string } | undefined;
    if (!cause?.message && !cause?.name) throw err;
    const said = `${(err as Error).message}: ${cause.name ?? 'Error'}: ${cause.message ?? ''}`.trim();
    const advice = cause.name === 'NoSuchKey' ? `: ${missingAdvice('OPENWORKER_PAYLOAD_STORE')}` : '';
    throw new Error(`${said}${advice}`, { cause: err });
  }
}

export const EXPIRATION_RULE_ID = 'openworker-payloads';

/**
 * Expires payloads under the prefix `days` after they were written, with one lifecycle rule of
 * this project's id. S3 replaces a bucket's whole lifecycle configuration on every write: the
 * bucket's other rules are read first and kept.
 */
export async function setExpiration(
  c: { bucket: string; prefix: string },
  days: number,
  env: Env,
): Promise<LifecycleRule[]> {
  const s3 = s3Client(env);
  try {
    let rules: LifecycleRule[] = [];
    try {
      rules = (await s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: c.bucket }))).Rules ?? [];
    } catch (err) {
      if ((err as { name?: string }).name !== 'NoSuchLifecycleConfiguration') throw err;
    }
    const ours: LifecycleRule = {
      ID: EXPIRATION_RULE_ID,
      Status: 'Enabled',
      Filter: { Prefix: c.prefix ? `${c.prefix}/` : '' },
      Expiration: { Days: days },
    };
    const next = [...rules.filter((r) => r.ID !== EXPIRATION_RULE_ID), ours];
    await s3.send(
      new PutBucketLifecycleConfigurationCommand({ Bucket: c.bucket, LifecycleConfiguration: { Rules: next } }),
    );
    return next;
  } catch (err) {
    const e = err as { name?: string; message?: string };
    throw new Error(`cannot set the lifecycle of s3://${c.bucket}: ${e.name ?? 'Error'}: ${e.message ?? ''}`.trim());
  } finally {
    s3.destroy();
  }
}
