import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { reservedName } from '../../workflows/deciders';
import { OpenWorkerError } from '../../client/session';

// Operators' sign-in tokens for the approvals app. The file holds only SHA-256 hashes (tokens are
// 32 random bytes, so a fast hash is enough), so it can ship with every replica's configuration
// like the approvers file; the token itself is shown once, to its operator.

export interface TokenRecord {
  name: string;
  sha256: string;
  createdAt: string;
}

const NAME = /^[A-Za-z0-9._@-]{1,64}$/;
const PREFIX = 'owa_';

// `file`: the tokens file, Settings.approvalsTokens (OPENWORKER_APPROVALS_TOKENS, else in the state dir).

const hashOf = (token: string): string => createHash('sha256').update(token).digest('hex');

export function readTokens(file: string): TokenRecord[] {
  if (!existsSync(file)) return [];
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as { tokens?: TokenRecord[] };
    if (!Array.isArray(parsed.tokens)) throw new Error('expected { "tokens": [...] }');
    return parsed.tokens;
  } catch (err) {
    throw new OpenWorkerError(`approvals tokens file ${file}: ${(err as Error).message}`, 'bad_input');
  }
}

function writeTokens(file: string, tokens: TokenRecord[]): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify({ tokens }, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

/** A new token for `name` (replacing its old one): returned once, stored hashed. */
export function createToken(name: string, file: string, now = new Date()): string {
  if (!NAME.test(name))
    throw new OpenWorkerError(
      `operator name '${name.slice(0, 70)}' must be 1-64 letters, digits, '.', '_', '@' or '-' (it is recorded as who decided)`,
      'bad_input',
    );
  const reserved = reservedName(name);
  if (reserved) throw new OpenWorkerError(`operator name ${reserved}`, 'bad_input');
  const token = `${PREFIX}${randomBytes(32).toString('base64url')}`;
  const rest = readTokens(file).filter((t) => t.name !== name);
  writeTokens(file, [...rest, { name, sha256: hashOf(token), createdAt: now.toISOString() }]);
  return token;
}

export function revokeToken(name: string, file: string): boolean {
  const all = readTokens(file);
  const rest = all.filter((t) => t.name !== name);
  if (rest.length === all.length) return false;
  writeTokens(file, rest);
  return true;
}

/** The operator a token belongs to, or undefined. Read per request: a revoke applies at once on every replica that sees the file. */
export function operatorOf(token: string | undefined, file: string): string | undefined {
  if (!token?.startsWith(PREFIX)) return undefined;
  const given = Buffer.from(hashOf(token), 'hex');
  return readTokens(file).find(
    (t) => /^[0-9a-f]{64}$/.test(t.sha256) && timingSafeEqual(Buffer.from(t.sha256, 'hex'), given),
  )?.name;
}
