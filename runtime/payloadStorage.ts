import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { ExternalStorage, StorageDriverClaim, type Payload, type StorageDriver } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { Env } from './config';
import type { Settings } from './settings';
import { readString } from './config';
import { stateDirFor } from './stateDir';

/**
 * Large payloads (a long transcript in a model call's input, the turn's input) are kept out of
 * history with the SDK's External Storage (`DataConverter.externalStorage`): a payload of 16 KiB or
 * more, already encrypted by the codecs, goes to a store, and history keeps a reference naming the
 * driver and its claim. `OPENWORKER_PAYLOAD_STORE` picks the store: `s3://bucket/prefix` for a
 * deployment on several hosts, or a directory (default `<state dir>/payloads`) for one machine.
 */

export const DEFAULT_THRESHOLD_BYTES = 16 * 1024;
export const FILE_DRIVER = 'openworker.file';

const SHA256_HEX = /^[0-9a-f]{64}$/;
const PayloadProto = temporal.api.common.v1.Payload;

/** `<dir>/<first two hex digits>/<sha256>`: the layout the claim-check codec used, so old files stay where they were. */
export const payloadFile = (dir: string, sha256: string): string => path.join(dir, sha256.slice(0, 2), sha256);

/** Reads a content-addressed payload file, checking its name and its hash. */
export async function readPayloadFile(dir: string, sha256: unknown, setting: string): Promise<Payload> {
  // The key names a file: anything but a SHA-256 in hex could walk out of the store.
  if (typeof sha256 !== 'string' || !SHA256_HEX.test(sha256))
    throw new Error(`not a payload reference: ${JSON.stringify(sha256)?.slice(0, 80)} is not a SHA-256 in hex`);
  let bytes: Buffer;
  try {
    bytes = await fs.readFile(payloadFile(dir, sha256));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    throw new Error(`payload ${sha256} is missing from the payload store ${dir}: ${missingAdvice(setting)}`);
  }
  if (createHash('sha256').update(bytes).digest('hex') !== sha256)
    throw new Error(`payload ${sha256} in ${dir} is corrupt (its hash differs)`);
  return PayloadProto.decode(bytes);
}

/**
 * What to do about a stored object that is gone, for the error that names it. Both causes look
 * alike from here: an expiry that deleted it, or a process given another store than the writer's.
 */
export const missingAdvice = (setting: string): string =>
  `restore it from a backup if \`storage expire\` deleted it (keep payloads longer than the longest a session or turn stays open), else give this process the store that wrote it (every client and worker must use the same ${setting})`;

/**
 * Sets a stored file's mtime to now, the age `storage expire` measures; false when there is no
 * file (or it cannot be touched, e.g. another user's on a shared volume): then it is written anew.
 */
async function touched(file: string): Promise<boolean> {
  const now = new Date();
  try {
    await fs.utimes(file, now, now);
    return true;
  } catch {
    return false;
  }
}

/**
 * A directory as a storage driver: content-addressed, written atomically, for one machine or a
 * shared volume. Storing bytes that are already there refreshes the file's mtime, so an expiry
 * never counts a payload a run stored today as old because another run stored it first.
 */
export function fileDriver(dir: string): StorageDriver {
  const storeOne = async (payload: Payload): Promise<StorageDriverClaim> => {
    const bytes = PayloadProto.encode(payload).finish();
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const target = payloadFile(dir, sha256);
    // Another run may have stored these bytes long ago: reusing them counts as writing them now.
    if (!(await touched(target))) {
      await fs.mkdir(path.dirname(target), { recursive: true });
      const tmp = `${target}.${randomUUID()}.tmp`;
      await fs.writeFile(tmp, bytes);
      await fs.rename(tmp, target); // a reader never sees half a payload
    }
    return new StorageDriverClaim({ sha256 });
  };
  return {
    name: FILE_DRIVER,
    type: FILE_DRIVER,
    store: (_ctx, payloads) => Promise.all(payloads.map(storeOne)),
    retrieve: (_ctx, claims) =>
      Promise.all(claims.map((c) => readPayloadFile(dir, c.claimData.sha256, 'OPENWORKER_PAYLOAD_STORE'))),
  };
}

export type PayloadStoreConfig = { kind: 'file'; dir: string } | { kind: 's3'; bucket: string; prefix: string };

/** `OPENWORKER_PAYLOAD_STORE`, parsed: `s3://bucket[/prefix]`, `file:///dir`, or a directory path. */
export function payloadStoreConfig(env: Env): PayloadStoreConfig {
  const raw = readString('OPENWORKER_PAYLOAD_STORE', env);
  if (!raw) return { kind: 'file', dir: path.join(stateDirFor(readString('OPENWORKER_STATE_DIR', env)), 'payloads') };
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(raw)?.[1]?.toLowerCase();
  if (scheme === 's3') {
    const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/i.exec(raw);
    if (!m)
      throw new Error(
        `OPENWORKER_PAYLOAD_STORE: '${raw.slice(0, 80)}' has no valid bucket name: use s3://bucket or s3://bucket/prefix`,
      );
    return { kind: 's3', bucket: m[1]!, prefix: (m[2] ?? '').replace(/^\/+|\/+$/g, '') };
  }
  if (scheme === 'file') return { kind: 'file', dir: path.resolve(new URL(raw).pathname) };
  if (scheme)
    throw new Error(
      `OPENWORKER_PAYLOAD_STORE: '${raw.slice(0, 80)}' is not supported: use s3://bucket/prefix or a directory`,
    );
  return { kind: 'file', dir: path.resolve(raw) };
}

/** Where payloads go, in words, for messages. */
export const describeStore = (c: PayloadStoreConfig): string =>
  c.kind === 'file' ? c.dir : `s3://${c.bucket}${c.prefix ? `/${c.prefix}` : ''}`;

/** The driver of a store: a directory's, or S3's (which writes every payload it is given, s3Driver.ts). */
export function driverFor(c: PayloadStoreConfig, env: Env): StorageDriver {
  if (c.kind === 'file') return fileDriver(c.dir);
  // Loaded only when used: the AWS SDK costs every CLI command ~100 ms to load. Its Node 20 warning
  // is about SDK releases from 2027 on, which the pinned version is not; on every command it would
  // bury the CLI's one-line errors. (A write for the AWS SDK, which reads it; not a setting.)
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { s3Driver } = require('./s3Driver') as typeof import('./s3Driver');
  return s3Driver(c, env);
}

/** The external storage of every client and worker. */
export function externalStorageFor(settings: Pick<Settings, 'payloadStore' | 'env'>): ExternalStorage {
  return new ExternalStorage({
    drivers: [driverFor(settings.payloadStore, settings.env)],
    payloadSizeThreshold: DEFAULT_THRESHOLD_BYTES,
  });
}

/**
 * Stores a probe payload as a worker would and reads it back: run on each host before its workers,
 * it says whether this host reaches the same store with working credentials.
 */
export async function checkPayloadStore(
  settings: Pick<Settings, 'payloadStore' | 'env'>,
): Promise<{ store: string; driver: string; bytes: number; ms: number }> {
  const config = settings.payloadStore;
  const driver = driverFor(config, settings.env);
  const probe: Payload = {
    metadata: { encoding: new TextEncoder().encode('binary/plain') },
    data: new Uint8Array(randomBytes(DEFAULT_THRESHOLD_BYTES)),
  };
  const started = Date.now();
  const target = { kind: 'workflow', namespace: 'openworker-storage-check', id: 'probe' } as const;
  const [claim] = await driver.store({ target }, [probe]);
  const [back] = await driver.retrieve({}, [claim!]);
  if (!back?.data || Buffer.compare(Buffer.from(back.data), Buffer.from(probe.data!)) !== 0)
    throw new Error(`payload store ${describeStore(config)} gave back other bytes than it was given`);
  // A directory keeps no probes; in S3 they are 16 KiB each, expired with the rest (storage expire).
  if (config.kind === 'file') await fs.rm(payloadFile(config.dir, claim!.claimData.sha256!), { force: true });
  return { store: describeStore(config), driver: driver.name, bytes: probe.data!.length, ms: Date.now() - started };
}
