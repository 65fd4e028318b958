import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { approvalFor, attachApprovals, parseApprovers } from '../../activities/approvers';
import type { ApproverKeyPair } from '../../client/keys';
import { createApproverKey, listApproverKeys, signDecision, signingKey } from '../../client/keys';
import type { DecisionToAuthorize } from '../../workflows/signatures';
import { authorizeDecision, base64Bytes, resultDigestOf } from '../../workflows/signatures';
import type { ApprovalRequirement } from '../../workflows/types';
import { planned, spec } from './helpers';
import { settingsFrom } from '../../runtime/settings';

const dir = mkdtempSync(path.join(tmpdir(), 'openworker-keys-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const alice = createApproverKey('alice', dir);
const bob = createApproverKey('bob', dir);
const mallory = createApproverKey('mallory', mkdtempSync(path.join(dir, 'elsewhere-')));

const T0 = Date.parse('2026-12-03T10:00:00.000Z');
const entry = {
  executionId: 'owx-0123456789abcdef0123456789abcdef',
  argsDigest: 'sha256:aa',
  tool: 'send_email',
  target: 'ann@example.com',
};

const config = parseApprovers(
  {
    approvers: { alice: alice.publicKey, bob: bob.publicKey },
    policy: [
      { tool: 'send_email', targets: ['*@example.com'], approvers: ['alice'] },
      { tool: '*', approvers: ['alice', 'bob'] },
    ],
    maxAgeSeconds: 600,
  },
  'test',
);
const withPolicy = approvalFor(config, 'send_email', 'ann@example.com');
const noPolicy = approvalFor({ ...config, policy: undefined }, 'send_email', 'ann@example.com');

/** A decision signed now-ish by `key` over `entry` (or what `over` changes). */
function signed(
  key: ApproverKeyPair,
  kind: DecisionToAuthorize['kind'],
  opts: { atMs?: number; over?: Partial<typeof entry>; decision?: string; park?: number; result?: unknown } = {},
): DecisionToAuthorize {
  const e = { ...entry, ...opts.over };
  const signature = signDecision(
    key,
    {
      executionId: e.executionId,
      argsDigest: e.argsDigest,
      decision: kind === 'recover' ? `recover:${opts.decision}` : kind,
      ...(opts.park !== undefined ? { park: opts.park } : {}),
      ...(kind === 'recover' ? { resultDigest: resultDigestOf(opts.result) } : {}),
    },
    new Date(opts.atMs ?? T0),
  );
  return {
    kind,
    by: key.name,
    signature,
    ...(opts.decision ? { decision: opts.decision } : {}),
    ...(opts.park !== undefined ? { park: opts.park } : {}),
    ...(opts.result !== undefined ? { result: opts.result } : {}),
  };
}

describe('signed decisions: authorizeDecision (every refusal has its reason)', () => {
  const good = signed(alice, 'approve');
  const cases: {
    name: string;
    req: ApprovalRequirement | undefined;
    d: DecisionToAuthorize;
    at?: number;
    used?: string[];
    ok: boolean;
    why?: RegExp;
    signer?: string;
  }[] = [
    {
      name: 'no approver keys on the worker: unsigned counts (the old protocol)',
      req: undefined,
      d: { kind: 'approve', by: 'anyone' },
      ok: true,
    },
    { name: 'no approver keys: a signature is not checked', req: undefined, d: { ...good, by: 'bob' }, ok: true },
    { name: 'keys, no policy: unsigned counts', req: noPolicy, d: { kind: 'approve', by: 'carol' }, ok: true },
    { name: 'keys, no policy: a valid signature is recorded', req: noPolicy, d: good, ok: true, signer: 'alice' },
    {
      name: 'keys, no policy: a bad signature is refused',
      req: noPolicy,
      d: {
        ...good,
        signature: { ...good.signature!, value: signed(bob, 'approve').signature!.value, keyId: good.signature!.keyId },
      },
      ok: false,
      why: /^wrongly signed: the signature by ed25519:\w+ does not match/,
    },
    {
      name: 'policy: unsigned approve is refused',
      req: withPolicy,
      d: { kind: 'approve', by: 'alice' },
      ok: false,
      why: /^unsigned: the approval policy accepts only approvals signed by alice \(openworker-temporal approve --key <name>\)$/,
    },
    {
      name: 'policy: unsigned recover is refused',
      req: withPolicy,
      d: { kind: 'recover', by: 'alice', decision: 'retry' },
      ok: false,
      why: /^unsigned: the approval policy accepts only recovery decisions signed by alice/,
    },
    {
      name: 'policy: unsigned reject counts (it causes no effect)',
      req: withPolicy,
      d: { kind: 'reject', by: 'mallory' },
      ok: true,
    },
    { name: 'policy: signed by the allowed approver', req: withPolicy, d: good, ok: true, signer: 'alice' },
    {
      name: 'policy: signed by an approver the rule does not name',
      req: withPolicy,
      d: signed(bob, 'approve'),
      ok: false,
      why: /^unauthorised: bob may not decide send_email → ann@example\.com; the policy \(policy\[0\] send_email → \*@example\.com\) allows alice$/,
    },
    { name: 'policy: anyone may reject, signed', req: withPolicy, d: signed(bob, 'reject'), ok: true, signer: 'bob' },
    {
      name: 'a key the worker does not know',
      req: withPolicy,
      d: signed(mallory, 'approve'),
      ok: false,
      why: /^wrongly signed: key ed25519:\w+ is not one of this worker's approver keys$/,
    },
    {
      name: 'signed for another execution',
      req: withPolicy,
      d: signed(alice, 'approve', { over: { executionId: 'owx-ffffffffffffffffffffffffffffffff' } }),
      ok: false,
      why: /^wrongly signed: .*does not match this call's execution ID/,
    },
    {
      name: 'signed for other arguments',
      req: withPolicy,
      d: signed(alice, 'approve', { over: { argsDigest: 'sha256:bb' } }),
      ok: false,
      why: /^wrongly signed/,
    },
    {
      name: 'a signed reject sent as an approve',
      req: withPolicy,
      d: { ...signed(alice, 'reject'), kind: 'approve' },
      ok: false,
      why: /^wrongly signed/,
    },
    {
      name: 'recover: signed retry sent as succeeded',
      req: withPolicy,
      d: { ...signed(alice, 'recover', { decision: 'retry', park: 1 }), decision: 'succeeded' },
      ok: false,
      why: /^wrongly signed/,
    },
    {
      name: 'recover: a signed retry sent with skipFence (the fence skipped without the signer saying so)',
      req: withPolicy,
      d: { ...signed(alice, 'recover', { decision: 'retry', park: 1 }), skipFence: true },
      ok: false,
      why: /^wrongly signed/,
    },
    {
      name: 'recover: a retry signed to skip the fence',
      req: withPolicy,
      d: { ...signed(alice, 'recover', { decision: 'retry-now', park: 1 }), decision: 'retry', skipFence: true },
      ok: true,
      signer: 'alice',
    },
    {
      name: 'recover: signed for park 1, sent for park 2',
      req: withPolicy,
      d: { ...signed(alice, 'recover', { decision: 'retry', park: 1 }), park: 2 },
      ok: false,
      why: /^wrongly signed/,
    },
    {
      name: 'recover: the result was changed after signing',
      req: withPolicy,
      d: { ...signed(alice, 'recover', { decision: 'succeeded', park: 1, result: { id: 1 } }), result: { id: 2 } },
      ok: false,
      why: /^wrongly signed/,
    },
    {
      name: 'recover: signed retry for its park',
      req: withPolicy,
      d: signed(alice, 'recover', { decision: 'retry', park: 1 }),
      ok: true,
      signer: 'alice',
    },
    {
      name: 'sent as someone else',
      req: withPolicy,
      d: { ...good, by: 'bob' },
      ok: false,
      why: /^wrongly signed: .*does not match/,
    },
    {
      name: 'replayed: the signature was used before in this turn',
      req: withPolicy,
      d: good,
      used: [good.signature!.value],
      ok: false,
      why: /^replayed: this signature by alice was already used/,
    },
    {
      name: 'expired: older than maxAgeSeconds',
      req: withPolicy,
      d: good,
      at: T0 + 601_000,
      ok: false,
      why: /^expired: signed at 2026-12-03T10:00:00\.000Z, 601 s before it arrived \(at most 600 s\)/,
    },
    { name: 'just within maxAgeSeconds', req: withPolicy, d: good, at: T0 + 600_000, ok: true, signer: 'alice' },
    {
      name: 'from the future beyond the skew',
      req: withPolicy,
      d: good,
      at: T0 - 61_000,
      ok: false,
      why: /^expired: .*in the future/,
    },
    {
      name: 'malformed signature bytes',
      req: withPolicy,
      d: { ...good, signature: { ...good.signature!, value: 'not base64!' } },
      ok: false,
      why: /^wrongly signed: malformed signature$/,
    },
    {
      name: 'malformed signing time',
      req: withPolicy,
      d: { ...good, signature: { ...good.signature!, signedAt: 'yesterday' } },
      ok: false,
      why: /^wrongly signed: malformed signature$/,
    },
    {
      name: 'a line break in a signed field',
      req: withPolicy,
      d: { ...good, by: 'alice\nby=bob' },
      ok: false,
      why: /^wrongly signed: a signed field has a line break$/,
    },
    {
      name: 'no rule matches: nobody may approve',
      req: approvalFor(
        parseApprovers(
          { approvers: { alice: alice.publicKey }, policy: [{ tool: 'charge_card', approvers: ['alice'] }] },
          't',
        ),
        'send_email',
        'ann@example.com',
      ),
      d: good,
      ok: false,
      why: /^unauthorised: alice may not decide send_email → ann@example\.com; the policy \(no rule matches\) allows nobody$/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const r = authorizeDecision(c.req, entry, c.d, c.at ?? T0 + 1000, new Set(c.used ?? []));
      assert.equal(r.ok, c.ok, JSON.stringify(r));
      if (!r.ok) assert.match(r.why, c.why!);
      if (r.ok) assert.equal(r.signer?.name, c.signer);
    });
  }
});

describe('approvers file and policy', () => {
  it('matches the first rule by tool and target glob; targets need a target', () => {
    assert.deepEqual(approvalFor(config, 'send_email', 'ann@example.com').allowed, ['alice']);
    assert.deepEqual(
      approvalFor(config, 'send_email', undefined).allowed,
      ['alice', 'bob'],
      'no target: the tool-only rule',
    );
    assert.deepEqual(approvalFor(config, 'charge_card', 'acct-1').allowed, ['alice', 'bob']);
    const narrow = parseApprovers(
      { approvers: { alice: alice.publicKey }, policy: [{ tool: 'send_email', approvers: ['alice'] }] },
      't',
    );
    assert.deepEqual(approvalFor(narrow, 'charge_card', undefined), {
      ...approvalFor(narrow, 'charge_card', undefined),
      signed: true,
      allowed: [],
      rule: 'no rule matches',
    });
  });
  it('attaches the requirement to calls that can have an effect, not to invalid or read-only ones', () => {
    assert.ok(
      attachApprovals(planned({ spec: spec({ effect: 'external', requiresApproval: true }) }), config).approval,
    );
    assert.ok(
      attachApprovals(planned({ spec: spec({ effect: 'external', requiresApproval: false }) }), config).approval,
      'recovering it can repeat an effect',
    );
    assert.equal(
      attachApprovals(planned({ spec: spec({ effect: 'read', requiresApproval: false }) }), config).approval,
      undefined,
    );
    assert.equal(attachApprovals(planned({ invalid: 'unknown tool' }), config).approval, undefined);
    assert.equal(
      attachApprovals(planned({ spec: spec({ effect: 'external', requiresApproval: true }) }), undefined).approval,
      undefined,
    );
  });
  const bad: [string, unknown, RegExp][] = [
    ['not an object', [], /^f: expected \{ "approvers"/],
    ['no approvers', { policy: [] }, /^f: "approvers" must map names to public keys/],
    [
      'a short key',
      { approvers: { alice: 'AAAA' } },
      /^f: approver 'alice': each key must be a 32-byte Ed25519 public key in base64$/,
    ],
    ['a bad name', { approvers: { 'al ice': alice.publicKey } }, /^f: approver name 'al ice' must be/],
    [
      'a key twice',
      { approvers: { alice: alice.publicKey, al: alice.publicKey } },
      /^f: approver 'al': key ed25519:\w+ is listed twice$/,
    ],
    ['policy not a list', { approvers: { alice: alice.publicKey }, policy: {} }, /^f: "policy" must be a list/],
    [
      'rule without a tool',
      { approvers: { alice: alice.publicKey }, policy: [{ approvers: ['alice'] }] },
      /^f: policy\[0\]\.tool must name a tool/,
    ],
    [
      'rule naming an unknown approver',
      { approvers: { alice: alice.publicKey }, policy: [{ tool: '*', approvers: ['eve'] }] },
      /^f: policy\[0\]\.approvers names eve, who have no key/,
    ],
    [
      'empty targets',
      { approvers: { alice: alice.publicKey }, policy: [{ tool: '*', targets: [], approvers: [] }] },
      /^f: policy\[0\]\.targets must be a non-empty list/,
    ],
    [
      'bad max age',
      { approvers: { alice: alice.publicKey }, maxAgeSeconds: 0 },
      /^f: "maxAgeSeconds" must be a positive integer$/,
    ],
  ];
  for (const [name, raw, why] of bad)
    it(`refuses ${name} with one line`, () => assert.throws(() => parseApprovers(raw, 'f'), { message: why }));
  it('several keys per approver (rotation)', () => {
    const c = parseApprovers({ approvers: { alice: [alice.publicKey, bob.publicKey] } }, 't');
    assert.deepEqual(
      c.approvers.map((a) => a.name),
      ['alice', 'alice'],
    );
  });
});

describe('approver keys on disk', () => {
  it('private key file is 0600; list and pick by name or the only one', () => {
    assert.equal(statSync(path.join(dir, 'alice.json')).mode & 0o777, 0o600);
    assert.deepEqual(
      listApproverKeys(dir).map((k) => k.name),
      ['alice', 'bob'],
    );
    assert.equal(signingKey('bob', dir, undefined)?.name, 'bob');
    assert.equal(
      signingKey(undefined, dir, settingsFrom({ OPENWORKER_APPROVER_KEY: 'alice' }).approverKey)?.name,
      'alice',
    );
    assert.equal(signingKey(undefined, dir, undefined), undefined, 'two keys and none named: unsigned');
    assert.throws(() => signingKey('eve', dir, undefined), {
      message: /^no approver key 'eve' in .*; have: alice, bob/,
    });
    assert.throws(() => createApproverKey('alice', dir), /a key named 'alice' already exists/);
    assert.throws(() => createApproverKey('a/b', dir), /key name 'a\/b' must be/);
  });
  it('base64 decoding in the sandbox agrees with Buffer', () => {
    for (const s of [alice.publicKey, 'AA==', 'AAA=', 'AAAA', ''])
      assert.deepEqual(Buffer.from(base64Bytes(s) ?? []), Buffer.from(s, 'base64'), s);
    assert.equal(base64Bytes('abc'), undefined);
  });
});
