import { sha256 } from '@noble/hashes/sha256';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils';

// Pure and sandbox-safe: used by the turn workflow, the worker and the client alike.

const hex = (text: string): string => bytesToHex(sha256(utf8ToBytes(text)));

/**
 * The execution ID of a tool call: stable across crashes, retries, continue-as-new and resets,
 * opaque (the model cannot guess or set it), header-safe and 36 characters long.
 */
export function executionIdFor(sessionId: string, turn: number, toolCallId: string): string {
  // Length-prefixed parts: no choice of ids can make two different triples encode the same.
  const encoded = ['openworker-execution/v1', sessionId, String(turn), toolCallId]
    .map((p) => `${p.length}:${p}`)
    .join('|');
  return `owx-${hex(encoded).slice(0, 32)}`;
}

/** JSON with object keys sorted, so equal arguments always hash equally. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? 'null';
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    // A null-prototype object keeps a `__proto__` key as data instead of swallowing it.
    const out: Record<string, unknown> = Object.create(null);
    for (const key of Object.keys(value).sort()) out[key] = sortKeys((value as Record<string, unknown>)[key]);
    return out;
  }
  return value;
}

export function argsDigest(args: unknown): string {
  return `sha256:${hex(canonicalJson(args))}`;
}
