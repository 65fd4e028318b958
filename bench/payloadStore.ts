import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { startS3Server } from '../test/support/s3Server';

// Where a benchmark's payloads go (`--payloads dir|s3`), whether they are encrypted (`--encrypt`),
// and what the payload store did: the environment every process of the run gets, and counters read
// before and after each run to give the store's work per turn.

export type PayloadsMode = 'dir' | 's3';

/** What a store did so far; a run's share is the difference of two readings. */
export type StoreCounts = Record<string, number>;

export interface BenchPayloadStore {
  /** For the driver and every worker process: the store, its credentials and the encryption keys. */
  env: Record<string, string>;
  /** In words, for latest.md's header. */
  describe: string;
  counts(): Promise<StoreCounts>;
  /** The store's own process (SeaweedFS), whose CPU a run measures beside the server's. */
  pid?: number;
  stop(): Promise<void>;
}

export const BENCH_BUCKET = 'openworker-bench';

/** A fresh key for this run only (`id=base64`), or encryption explicitly off: a key file of the checkout must not decide. */
export function encryptionEnv(encrypt: boolean): Record<string, string> {
  return encrypt
    ? { OPENWORKER_ENCRYPTION_KEYS: `bench=${randomBytes(32).toString('base64')}`, OPENWORKER_ENCRYPTION: 'on' }
    : { OPENWORKER_ENCRYPTION: 'off' };
}

/** Files and bytes under a payload directory (a directory store writes each payload once, reads leave no trace). */
export function dirCounts(dir: string): StoreCounts {
  const total = { objects: 0, bytes: 0 };
  const walk = (d: string): void => {
    if (!existsSync(d)) return;
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const path = join(d, e.name);
      if (e.isDirectory()) walk(path);
      else if (!e.name.endsWith('.tmp')) {
        total.objects++;
        total.bytes += statSync(path).size;
      }
    }
  };
  walk(dir);
  return total;
}

/**
 * SeaweedFS's request counters for one bucket: PUTs, and GETs with HEADs (it counts an existence
 * check as a GET), the seconds it spent answering them, and the bytes it received.
 */
export function s3RequestCounts(metrics: string, bucket: string): StoreCounts {
  const out: StoreCounts = { put: 0, getOrHead: 0, putMs: 0, getOrHeadMs: 0, bytesIn: 0 };
  const add = (key: string, v: number): void => void (out[key] = out[key]! + v);
  for (const line of metrics.split('\n')) {
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (!line.includes(`bucket="${bucket}"`) || !Number.isFinite(value)) continue;
    const type = /type="(PUT|GET)"/.exec(line)?.[1];
    const key = type === 'PUT' ? 'put' : type === 'GET' ? 'getOrHead' : undefined;
    if (key && line.startsWith('SeaweedFS_s3_request_total{')) add(key, value);
    else if (key && line.startsWith('SeaweedFS_s3_request_seconds_sum{')) add(`${key}Ms`, value * 1000);
    else if (line.startsWith('SeaweedFS_s3_bucket_traffic_received_bytes_total{')) add('bytesIn', value);
  }
  return out;
}

export async function startBenchPayloadStore(
  mode: PayloadsMode,
  encrypt: boolean,
  dir: string,
): Promise<BenchPayloadStore> {
  const keys = encryptionEnv(encrypt);
  const sealed = encrypt ? ', encrypted (AES-256-GCM, a fresh key)' : ', not encrypted';
  if (mode === 'dir')
    return {
      env: { OPENWORKER_PAYLOAD_STORE: dir, ...keys },
      describe: `payloads in a directory${sealed}`,
      counts: async () => dirCounts(dir),
      stop: async () => {},
    };
  // As runtime/payloadStorage.ts does: the AWS SDK's Node 20 notice is about releases after the pinned one.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const s3 = await startS3Server({ metrics: true });
  await s3.createBucket(BENCH_BUCKET);
  const client = s3.client();
  const objects = async (): Promise<StoreCounts> => {
    const total = { objects: 0, bytes: 0 };
    let token: string | undefined;
    do {
      const page = await client.send(
        new ListObjectsV2Command({ Bucket: BENCH_BUCKET, ...(token ? { ContinuationToken: token } : {}) }),
      );
      for (const o of page.Contents ?? []) {
        total.objects++;
        total.bytes += o.Size ?? 0;
      }
      token = page.NextContinuationToken;
    } while (token);
    return total;
  };
  return {
    env: {
      OPENWORKER_PAYLOAD_STORE: `s3://${BENCH_BUCKET}/payloads`,
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
      AWS_REGION: s3.region,
      ...keys,
    },
    describe: `payloads in S3 (SeaweedFS ${s3.endpoint}, the tests' server)${sealed}`,
    counts: async () => ({
      ...s3RequestCounts(await (await fetch(s3.metricsUrl!)).text(), BENCH_BUCKET),
      ...(await objects()),
    }),
    pid: s3.pid,
    stop: async () => {
      client.destroy();
      await s3.stop();
    },
  };
}

/** What a run's turns cost the store, per turn: the difference of two readings. */
export function perTurn(before: StoreCounts, after: StoreCounts, turns: number): StoreCounts {
  return Object.fromEntries(Object.keys(after).map((k) => [k, (after[k]! - (before[k] ?? 0)) / Math.max(1, turns)]));
}
