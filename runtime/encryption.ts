import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { Env } from './config';
import { readString } from './config';
import type { Settings } from './settings';
import { encryptionFrom } from './settings';
import { stateDirFor } from './stateDir';

// Payload encryption: every payload a client or worker sends to Temporal (tool arguments and
// results, transcripts, decisions) is AES-256-GCM ciphertext in history, tagged with the id of the
// key that sealed it. Several keys may be loaded at once, so a key can be rotated: the first (or
// the file's `active`) seals new payloads, all of them open old ones. Keys never enter history.

type Payload = temporal.api.common.v1.IPayload;

export const ENCRYPTED_ENCODING = 'binary/openworker-encrypted';
const KEY_ID = 'encryption-key-id';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface Keyring {
  /** Seals new payloads. */
  active: string;
  keys: ReadonlyMap<string, Buffer>;
  /** Where the keys came from, for error messages. */
  source: string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function parseKey(id: string, b64: unknown, source: string): Buffer {
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(id))
    throw new Error(`${source}: key id '${id.slice(0, 70)}' must be 1-64 letters, digits, '.', '_' or '-'`);
  const key = typeof b64 === 'string' ? Buffer.from(b64, 'base64') : Buffer.alloc(0);
  if (key.length !== 32)
    throw new Error(
      `${source}: key '${id}' must be 32 bytes in base64 (openssl rand -base64 32), got ${key.length} bytes`,
    );
  return key;
}

/** `id=base64,id2=base64`: the first one seals. */
export function keyringFromList(list: string, source = 'OPENWORKER_ENCRYPTION_KEYS'): Keyring {
  const keys = new Map<string, Buffer>();
  for (const item of list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = item.indexOf('=');
    if (eq <= 0)
      throw new Error(`${source}: expected id=base64key entries separated by commas, got '${item.slice(0, 20)}…'`);
    const id = item.slice(0, eq);
    if (keys.has(id)) throw new Error(`${source}: key id '${id}' appears twice`);
    keys.set(id, parseKey(id, item.slice(eq + 1), source));
  }
  if (!keys.size) throw new Error(`${source}: no keys`);
  return { active: keys.keys().next().value!, keys, source };
}

/** A JSON file `{ "active": "k2", "keys": { "k1": "base64", "k2": "base64" } }`. */
export function keyringFromFile(file: string): Keyring {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`encryption key file ${file}: ${(err as Error).message}`);
  }
  const obj = raw as { active?: unknown; keys?: unknown };
  if (!obj || typeof obj !== 'object' || !obj.keys || typeof obj.keys !== 'object' || Array.isArray(obj.keys)) {
    throw new Error(`encryption key file ${file}: expected { "active": "<id>", "keys": { "<id>": "<base64>" } }`);
  }
  const keys = new Map<string, Buffer>();
  for (const [id, b64] of Object.entries(obj.keys as Record<string, unknown>)) keys.set(id, parseKey(id, b64, file));
  if (typeof obj.active !== 'string' || !keys.has(obj.active))
    throw new Error(`encryption key file ${file}: "active" must name one of its keys (${[...keys.keys()].join(', ')})`);
  return { active: obj.active, keys, source: file };
}

/**
 * The keys this process uses, or undefined when payloads stay in plain text:
 * `OPENWORKER_ENCRYPTION=off` → none; else `OPENWORKER_ENCRYPTION_KEYS`; else the file named by
 * `OPENWORKER_ENCRYPTION_KEY_FILE`; else `.openworker/encryption-keys.json` if it exists; else none.
 */
export function keyringFromEnv(env: Env): Keyring | undefined {
  return keyringFor({
    encryption: encryptionFrom(env),
    stateDir: stateDirFor(readString('OPENWORKER_STATE_DIR', env)),
  });
}

/** The keys of these settings (see keyringFromEnv). */
export function keyringFor(settings: Pick<Settings, 'encryption' | 'stateDir'>): Keyring | undefined {
  const { mode, keys, keyFile } = settings.encryption;
  if (mode === 'off') return undefined;
  if (keys) return keyringFromList(keys);
  if (keyFile) return keyringFromFile(path.resolve(keyFile));
  const local = defaultKeyFile(settings.stateDir);
  if (existsSync(local)) return keyringFromFile(local);
  if (mode === 'on')
    throw new Error(
      'OPENWORKER_ENCRYPTION=on but no keys: set OPENWORKER_ENCRYPTION_KEYS or OPENWORKER_ENCRYPTION_KEY_FILE',
    );
  return undefined;
}

export const defaultKeyFile = (stateDir: string): string => path.join(stateDir, 'encryption-keys.json');

/**
 * `dev` encrypts by default: when no keys are configured and encryption is not off, it writes a
 * fresh key to `.openworker/encryption-keys.json` (0600) once; the loader above then gives the same
 * key to the worker, the CLI and the codec endpoint. Returns the file it created, else undefined.
 */
export function ensureLocalKeyFile(
  settings: Pick<Settings, 'encryption' | 'stateDir'>,
  now = new Date(),
): string | undefined {
  const { mode, keys, keyFile } = settings.encryption;
  if (mode === 'off' || keys || keyFile) return undefined;
  const file = defaultKeyFile(settings.stateDir);
  if (existsSync(file)) return undefined;
  const id = `local-${now.toISOString().slice(0, 10).replaceAll('-', '')}`;
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    // 'wx': two `dev`s starting at once must not each write a different key.
    writeFileSync(
      file,
      `${JSON.stringify({ active: id, keys: { [id]: randomBytes(32).toString('base64') } }, null, 2)}\n`,
      { mode: 0o600, flag: 'wx' },
    );
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return undefined;
    throw err;
  }
  return file;
}

export function encryptionCodec(ring: Keyring): PayloadCodec {
  const sealWith = ring.keys.get(ring.active)!;
  return {
    async encode(payloads: Payload[]): Promise<Payload[]> {
      return payloads.map((p) => {
        const iv = randomBytes(IV_BYTES);
        const cipher = createCipheriv('aes-256-gcm', sealWith, iv);
        const sealed = Buffer.concat([
          cipher.update(temporal.api.common.v1.Payload.encode(p).finish()),
          cipher.final(),
        ]);
        return {
          metadata: { encoding: encoder.encode(ENCRYPTED_ENCODING), [KEY_ID]: encoder.encode(ring.active) },
          data: Buffer.concat([iv, cipher.getAuthTag(), sealed]),
        };
      });
    },
    async decode(payloads: Payload[]): Promise<Payload[]> {
      return payloads.map((p) => {
        if (!p.metadata?.encoding || decoder.decode(p.metadata.encoding) !== ENCRYPTED_ENCODING) return p;
        const id = p.metadata[KEY_ID] ? decoder.decode(p.metadata[KEY_ID]) : '';
        const key = ring.keys.get(id);
        if (!key) {
          throw new Error(
            `payload encrypted with key '${id.slice(0, 64)}', which this process does not have (it has ${[...ring.keys.keys()].join(', ')} from ${ring.source}); add that key`,
          );
        }
        const data = Buffer.from(p.data ?? new Uint8Array());
        if (data.length < IV_BYTES + TAG_BYTES)
          throw new Error(`payload encrypted with key '${id}' is truncated (${data.length} bytes)`);
        const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES));
        decipher.setAuthTag(data.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
        let plain: Buffer;
        try {
          plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
        } catch {
          throw new Error(
            `payload encrypted with key '${id}' does not authenticate: it was altered, or the key with that id is not the one that sealed it`,
          );
        }
        return temporal.api.common.v1.Payload.decode(plain);
      });
    },
  };
}

/**
 * Without keys, a sealed payload would otherwise fail deep in the payload converter ("unknown
 * encoding"): say which key it needs and where keys come from.
 */
export function noKeysCodec(stateDir: string): PayloadCodec {
  return {
    encode: async (payloads) => payloads,
    async decode(payloads) {
      for (const p of payloads) {
        if (p.metadata?.encoding && decoder.decode(p.metadata.encoding) === ENCRYPTED_ENCODING) {
          const id = p.metadata[KEY_ID] ? decoder.decode(p.metadata[KEY_ID]).slice(0, 64) : '';
          throw new Error(
            `payload encrypted with key '${id}', and this process has no keys: run where \`dev\` ran (it reads ${defaultKeyFile(stateDir)}) or set OPENWORKER_ENCRYPTION_KEY_FILE or OPENWORKER_ENCRYPTION_KEYS`,
          );
        }
      }
      return payloads;
    },
  };
}
