import { createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { SignedFields } from '../workflows/signatures';
import { keyIdOf, signedMessage } from '../workflows/signatures';
import type { DecisionSignature } from '../workflows/types';
import { reservedName } from '../workflows/deciders';
import { OpenWorkerError } from './session';

// Approver keys on the approver's machine: one Ed25519 key pair per name, the private half in a
// 0600 file that never leaves it. The worker gets only the public halves (see activities/approvers.ts).

export interface ApproverKeyPair {
  name: string;
  keyId: string;
  /** Raw 32-byte public key, base64: what goes into the worker's approvers file. */
  publicKey: string;
  /** PKCS#8 DER, base64. */
  privateKey: string;
  createdAt: string;
}

const NAME = /^[A-Za-z0-9._@-]{1,64}$/;
// The fixed 12-byte SPKI prefix of an Ed25519 public key (RFC 8410).
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

// `dir`: the keys directory, Settings.keysDir (OPENWORKER_KEYS_DIR, else ~/.openworker/keys).

const fileOf = (dir: string, name: string): string => path.join(dir, `${name}.json`);

export function createApproverKey(name: string, dir: string): ApproverKeyPair {
  if (!NAME.test(name))
    throw new OpenWorkerError(
      `key name '${name.slice(0, 70)}' must be 1-64 letters, digits, '.', '_', '@' or '-' (it is the approver's name)`,
      'bad_input',
    );
  const reserved = reservedName(name);
  if (reserved) throw new OpenWorkerError(`key name ${reserved}`, 'bad_input');
  const file = fileOf(dir, name);
  if (existsSync(file))
    throw new OpenWorkerError(
      `a key named '${name}' already exists in ${dir}; pick another name or delete ${file}`,
      'bad_input',
    );
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length);
  const key: ApproverKeyPair = {
    name,
    keyId: keyIdOf(raw),
    publicKey: raw.toString('base64'),
    privateKey: privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64'),
    createdAt: new Date().toISOString(),
  };
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(file, `${JSON.stringify(key, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return key;
}

function readKey(file: string): ApproverKeyPair {
  let key: Partial<ApproverKeyPair>;
  try {
    key = JSON.parse(readFileSync(file, 'utf8')) as Partial<ApproverKeyPair>;
  } catch (err) {
    throw new OpenWorkerError(`approver key ${file}: ${(err as Error).message}`, 'bad_input');
  }
  if (typeof key.name !== 'string' || typeof key.publicKey !== 'string' || typeof key.privateKey !== 'string') {
    throw new OpenWorkerError(
      `approver key ${file}: expected { name, publicKey, privateKey } (make one with 'openworker-temporal keys create <name>')`,
      'bad_input',
    );
  }
  return { ...key, keyId: keyIdOf(Buffer.from(key.publicKey, 'base64')) } as ApproverKeyPair;
}

export function listApproverKeys(dir: string): ApproverKeyPair[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => readKey(path.join(dir, f)));
}

/**
 * The key a CLI decision is signed with: the named one (`--key`, else `fallback`:
 * $OPENWORKER_APPROVER_KEY), else the only key in the keys directory, else none (the decision goes unsigned).
 */
export function signingKey(name: string | undefined, dir: string, fallback?: string): ApproverKeyPair | undefined {
  const wanted = name ?? fallback;
  const keys = listApproverKeys(dir);
  if (wanted) {
    const key = keys.find((k) => k.name === wanted);
    if (!key)
      throw new OpenWorkerError(
        `no approver key '${wanted}' in ${dir}; have: ${keys.map((k) => k.name).join(', ') || 'none'} (openworker-temporal keys create ${wanted})`,
        'bad_input',
      );
    return key;
  }
  return keys.length === 1 ? keys[0] : undefined;
}

/** Signs what a decision covers (see signedMessage) with the approver's private key. */
export function signDecision(
  key: ApproverKeyPair,
  fields: Omit<SignedFields, 'signedAt' | 'by'>,
  now = new Date(),
): DecisionSignature {
  const signedAt = now.toISOString();
  const privateKey = createPrivateKey({ key: Buffer.from(key.privateKey, 'base64'), format: 'der', type: 'pkcs8' });
  const value = sign(null, signedMessage({ ...fields, by: key.name, signedAt }), privateKey).toString('base64');
  return { keyId: key.keyId, signedAt, value };
}
