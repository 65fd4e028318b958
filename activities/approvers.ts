import { readFileSync } from 'node:fs';
import { reservedName } from '../workflows/deciders';
import { DEFAULT_MAX_AGE_MS, keyIdOf } from '../workflows/signatures';
import type { ApprovalRequirement, ApproverKey, PlannedCall } from '../workflows/types';
import type { ToolRegistry } from './registry';

// Who may approve what, on the worker. The approvers file holds public keys only:
//
//   { "approvers": { "alice": "<base64 Ed25519 public key>", "bob": ["<key>", "<older key>"] },
//     "policy": [ { "tool": "send_email", "targets": ["*@example.com"], "approvers": ["alice"] },
//                 { "tool": "*", "approvers": ["alice", "bob"] } ],
//     "maxAgeSeconds": 900 }
//
// Without `policy`, signatures are checked when present and unsigned decisions still count. With
// it, approve and recover decisions count only when signed by an approver of the first matching
// rule; a call no rule matches can be rejected but not approved.

export interface PolicyRule {
  tool: string;
  targets?: string[];
  approvers: string[];
}

export interface ApproversConfig {
  approvers: ApproverKey[];
  policy?: PolicyRule[];
  maxAgeMs: number;
}

const NAME = /^[A-Za-z0-9._@-]{1,64}$/;

/** Validates a parsed approvers file; every error names the field and what to do. */
export function parseApprovers(raw: unknown, source: string): ApproversConfig {
  const fail = (why: string): never => {
    throw new Error(`${source}: ${why}`);
  };
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    fail('expected { "approvers": { "<name>": "<base64 public key>" }, "policy"?: [...] }');
  const r = raw as Record<string, unknown>;
  if (!r.approvers || typeof r.approvers !== 'object' || Array.isArray(r.approvers))
    fail('"approvers" must map names to public keys (openworker-temporal keys list prints them)');
  const approvers: ApproverKey[] = [];
  for (const [name, value] of Object.entries(r.approvers as Record<string, unknown>)) {
    if (!NAME.test(name))
      fail(`approver name '${name.slice(0, 70)}' must be 1-64 letters, digits, '.', '_', '@' or '-'`);
    const reserved = reservedName(name);
    if (reserved) fail(`approver name ${reserved}`);
    for (const key of Array.isArray(value) ? value : [value]) {
      const bytes = typeof key === 'string' ? Buffer.from(key, 'base64') : Buffer.alloc(0);
      if (bytes.length !== 32 || bytes.toString('base64') !== key)
        fail(`approver '${name}': each key must be a 32-byte Ed25519 public key in base64`);
      const keyId = keyIdOf(bytes);
      if (approvers.some((a) => a.keyId === keyId)) fail(`approver '${name}': key ${keyId} is listed twice`);
      approvers.push({ name, keyId, publicKey: key as string });
    }
  }
  if (!approvers.length) fail('no approver keys');
  const known = new Set(approvers.map((a) => a.name));
  let policy: PolicyRule[] | undefined;
  if (r.policy !== undefined) {
    if (!Array.isArray(r.policy)) fail('"policy" must be a list of { tool, targets?, approvers } rules');
    policy = (r.policy as unknown[]).map((rule, i) => {
      const p = (rule ?? {}) as Record<string, unknown>;
      const at = `policy[${i}]`;
      if (typeof p.tool !== 'string' || !p.tool) fail(`${at}.tool must name a tool, or be "*"`);
      if (
        p.targets !== undefined &&
        !(Array.isArray(p.targets) && p.targets.length && p.targets.every((t) => typeof t === 'string' && t))
      )
        fail(`${at}.targets must be a non-empty list of patterns ("*" matches any characters)`);
      if (!Array.isArray(p.approvers) || !p.approvers.every((a) => typeof a === 'string'))
        fail(`${at}.approvers must be a list of approver names`);
      const unknown = (p.approvers as string[]).filter((a) => !known.has(a));
      if (unknown.length) fail(`${at}.approvers names ${unknown.join(', ')}, who have no key in "approvers"`);
      return {
        tool: p.tool as string,
        ...(p.targets ? { targets: p.targets as string[] } : {}),
        approvers: p.approvers as string[],
      };
    });
  }
  let maxAgeMs = DEFAULT_MAX_AGE_MS;
  if (r.maxAgeSeconds !== undefined) {
    if (!Number.isInteger(r.maxAgeSeconds) || (r.maxAgeSeconds as number) < 1)
      fail('"maxAgeSeconds" must be a positive integer');
    maxAgeMs = (r.maxAgeSeconds as number) * 1000;
  }
  return { approvers, ...(policy ? { policy } : {}), maxAgeMs };
}

export function loadApprovers(file: string): ApproversConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`approvers file ${file}: ${(err as Error).message}`);
  }
  return parseApprovers(raw, `approvers file ${file}`);
}

/** `*` matches any run of characters; everything else literally. */
const glob = (pattern: string, value: string): boolean =>
  new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    's',
  ).test(value);

/** The requirement the worker attaches to a call when it plans it. */
export function approvalFor(config: ApproversConfig, tool: string, target: string | undefined): ApprovalRequirement {
  const base = { approvers: config.approvers, maxAgeMs: config.maxAgeMs };
  if (!config.policy) return { ...base, signed: false, allowed: [...new Set(config.approvers.map((a) => a.name))] };
  const index = config.policy.findIndex(
    (r) =>
      (r.tool === '*' || r.tool === tool) &&
      (!r.targets || (target !== undefined && r.targets.some((t) => glob(t, target)))),
  );
  if (index < 0) return { ...base, signed: true, allowed: [], rule: 'no rule matches' };
  const rule = config.policy[index]!;
  return {
    ...base,
    signed: true,
    allowed: [...rule.approvers],
    rule: `policy[${index}] ${rule.tool}${rule.targets ? ` → ${rule.targets.join(' | ')}` : ''}`,
  };
}

/** A valid call that needs approval or may have an external effect: a person may approve or recover it. */
export const mayCauseEffect = (call: PlannedCall): boolean =>
  !call.invalid && !!call.spec && (call.spec.requiresApproval || call.spec.effect === 'external');

/** Calls that can cause an effect carry the requirement: approving them, and recovering them. */
export function attachApprovals(call: PlannedCall, config: ApproversConfig | undefined): PlannedCall {
  if (!config || !mayCauseEffect(call)) return call;
  return { ...call, approval: approvalFor(config, call.name, call.target) };
}

/** A registry whose planned calls carry the approval requirement. */
export function withApprovals(registry: ToolRegistry, config: ApproversConfig | undefined): ToolRegistry {
  if (!config) return registry;
  return { ...registry, plan: (calls) => registry.plan(calls).map((c) => attachApprovals(c, config)) };
}
