import { createHash, randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { stateDir } from './stateDir';
import { readString } from './config';

const SHA256_HEX = /^[0-9a-f]{64}$/;

type Payload = temporal.api.common.v1.IPayload;

/**
 * Large payloads (a long transcript in a model call's input, the turn's input) are kept out of
 * history by the claim-check pattern: a payload over the threshold is stored under the SHA-256 of
 * its bytes, and history holds a ~150-byte reference. Every client and worker of a deployment must
 * see the same store: by default a directory (`OPENWORKER_PAYLOAD_STORE`, else
 * `.openworker/payloads`), which suits one machine or a shared volume; anything else implements
 * `PayloadStore`.
 */

export interface PayloadStore {
  put(key: string, bytes: Uint8Array): Promise<void>;
  /** The bytes, or undefined when the store does not have them. */
  get(key: string): Promise<Uint8Array | undefined>;
  /** Says where, in error messages. */
  readonly where: string;
}

export const CLAIM_ENCODING = 'binary/openworker-claim-check';
export const DEFAULT_THRESHOLD_BYTES = 16 * 1024;

export function directoryStore(dir: string): PayloadStore {
  const file = (key: string) => path.join(dir, key.slice(0, 2), key);
  return {
    where: dir,
    async put(key, bytes) {
      const target = file(key);
      try {
        await fs.access(target);
        return; // content-addressed: already there means the same bytes
      } catch {
        // not stored yet
      }
      await fs.mkdir(path.dirname(target), { recursive: true });
      const tmp = `${target}.${randomUUID()}.tmp`;
      await fs.writeFile(tmp, bytes);
      await fs.rename(tmp, target); // atomic: a reader never sees half a payload
    },
    async get(key) {
      try {
        return new Uint8Array(await fs.readFile(file(key)));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
    },
  };
}

export function defaultPayloadStore(env: NodeJS.ProcessEnv = process.env): PayloadStore {
  return directoryStore(path.resolve(readString('OPENWORKER_PAYLOAD_STORE', env) ?? path.join(stateDir(), 'payloads')));
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function claimCheckCodec(
  store: PayloadStore = defaultPayloadStore(),
  thresholdBytes = DEFAULT_THRESHOLD_BYTES,
): PayloadCodec {
  return {
    async encode(payloads: Payload[]): Promise<Payload[]> {
      return Promise.all(
        payloads.map(async (p) => {
          const bytes = temporal.api.common.v1.Payload.encode(p).finish();
          if (bytes.length <= thresholdBytes) return p;
          const key = createHash('sha256').update(bytes).digest('hex');
          await store.put(key, bytes);
          return {
            metadata: { encoding: encoder.encode(CLAIM_ENCODING) },
            data: encoder.encode(JSON.stringify({ sha256: key, bytes: bytes.length })),
          };
        }),
      );
    },
    async decode(payloads: Payload[]): Promise<Payload[]> {
      return Promise.all(
        payloads.map(async (p) => {
          const encoding = p.metadata?.encoding ? decoder.decode(p.metadata.encoding) : undefined;
          if (encoding !== CLAIM_ENCODING) return p;
          const { sha256: key } = JSON.parse(decoder.decode(p.data ?? new Uint8Array())) as { sha256: unknown };
          // The key names a file: anything but a SHA-256 in hex could walk out of the store.
          if (typeof key !== 'string' || !SHA256_HEX.test(key))
            throw new Error(`not a payload reference: ${JSON.stringify(key)?.slice(0, 80)} is not a SHA-256 in hex`);
          const bytes = await store.get(key);
          if (!bytes) {
            throw new Error(
              `payload ${key} is not in the payload store ${store.where}: every client and worker must share it (OPENWORKER_PAYLOAD_STORE)`,
            );
          }
          if (createHash('sha256').update(bytes).digest('hex') !== key)
            throw new Error(`payload ${key} in ${store.where} is corrupt (its hash differs)`);
          return temporal.api.common.v1.Payload.decode(bytes);
        }),
      );
    },
  };
}
