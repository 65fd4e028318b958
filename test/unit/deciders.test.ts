import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { parseApprovers } from '../../activities/approvers';
import { approvalsApp } from '../../apps/approvals/app';
import type { OpenWorkerClient } from '../../client/connection';
import { createToken } from '../../apps/approvals/tokens';
import { checkBy } from '../../client/decisions';
import { createApproverKey } from '../../client/keys';
import { approvedByPerson, approverOf, needsNoApproval, RESERVED_NAMES, reservedName } from '../../workflows/deciders';
import { parseDecision } from '../../workflows/decisions';
import { addGrant, revokeGrant } from '../../workflows/grants';
import { applyLedger, newEntry } from '../../workflows/ledger';
import type { Approver, DecisionKind, LedgerEntry } from '../../workflows/types';
import { AT, entryIn, intakeOver, planned, spec } from './helpers';
import { settingsFrom } from '../../runtime/settings';

// Issue #27 hole 4: a person named `auto`. Who approved is a kind (person / auto with why), never a
// name compared to a sentinel; the names the system shows for itself are refused at every boundary.

describe('deciders: reserved names', () => {
  const cases: [string, boolean][] = [
    ['auto', true],
    ['Auto', true],
    [' AUTO ', true],
    ['system', true],
    ['policy', true],
    ['grant', true],
    ['the previous runtime', true],
    ['alice', false],
    ['automatic', false],
    ['auto2', false],
    ['auto-approver', false],
    ['cli', false],
    ['grantor', false],
    ['ａｕｔｏ', true],
    ['au\u200bto', true],
    ['auto\u2060', true],
    ['the  previous\truntime', true],
    ['\u0430uto', false], // a Cyrillic 'а': another script, another name (the kind decides, not the name)
  ];
  for (const [name, reserved] of cases)
    it(`${JSON.stringify(name)} is ${reserved ? '' : 'not '}reserved`, () => {
      const why = reservedName(name);
      assert.equal(why !== undefined, reserved);
      if (why) {
        assert.match(
          why,
          /^'.*' is reserved for decisions no person made \(reserved: 'auto', .*\); decide under your own name$/,
        );
        assert.ok(!why.includes('\n'));
      }
    });

  it('every reserved name is lower case and trimmed (they are compared that way)', () => {
    for (const n of RESERVED_NAMES) assert.equal(n, n.trim().toLowerCase());
  });
});

describe('deciders: a raw signal under a reserved name', () => {
  const kinds: [DecisionKind, Record<string, unknown>][] = [
    ['approve', {}],
    ['reject', { reason: 'no' }],
    ['recover', { decision: 'retry' }],
  ];
  for (const [kind, extra] of kinds) {
    it(`${kind} by 'auto' is refused, naming the kind and the name`, () => {
      const r = parseDecision(kind, { toolCallId: 'c1', by: 'auto', decisionId: 'd1', ...extra });
      assert.deepEqual(r.ok, false);
      if (r.ok) return;
      assert.match(r.why, new RegExp(`^refused ${kind}: by 'auto' is reserved for decisions no person made`));
      assert.deepEqual([r.toolCallId, r.by, r.decisionId], ['c1', 'auto', 'd1']);
    });
  }

  it('the intake records the refusal once, as ignored, and the call keeps waiting', () => {
    const ledger = new Map([['call_1', entryIn('awaiting_approval')]]);
    const { intake, decisions } = intakeOver(ledger);
    intake.modelPending(false);
    intake.decide('approve', { toolCallId: 'call_1', by: 'auto' });
    assert.equal(ledger.get('call_1')!.state, 'awaiting_approval');
    assert.equal(decisions.length, 1);
    assert.equal(decisions[0]!.outcome, 'ignored');
    assert.equal(decisions[0]!.by, 'auto');
    assert.match(decisions[0]!.why!, /^refused approve: by 'auto' is reserved/);
  });

  it('grant and revoke under a reserved name change nothing', () => {
    const g = addGrant([], { grantId: 'g-1', tool: 'send_email', by: 'alice' }, AT);
    assert.ok(g.ok);
    const bad = addGrant([], { grantId: 'g-2', tool: 'send_email', by: 'auto' }, AT);
    assert.deepEqual(bad, { ok: false, why: `refused grant: by ${reservedName('auto')!}` });
    const rv = revokeGrant(g.ok ? g.grants : [], { grantId: 'g-1', by: 'Policy' }, AT);
    assert.equal(rv.ok, false);
  });
});

describe('deciders: who approved is a kind', () => {
  const call = (requiresApproval: boolean) => planned({ spec: spec({ requiresApproval }) });
  const person: Approver = { kind: 'person', name: 'auto' };

  it('a call that needs no approval is approved automatically, by policy', () => {
    const e = newEntry(call(false), 'owx-1', 0, AT);
    assert.deepEqual(e.approver, { kind: 'auto', why: 'policy' });
    assert.equal(e.approvedBy, 'auto');
  });

  const approvals: [string, Parameters<typeof applyLedger>[1], Approver][] = [
    ['a signal: a person, whatever the name', { type: 'approved', by: 'auto' }, person],
    ['a standing grant: automatic', { type: 'approved', by: 'alice', grant: 'g-1' }, { kind: 'auto', why: 'grant' }],
  ];
  for (const [name, input, want] of approvals)
    it(`approved by ${name}`, () => {
      const e = applyLedger(newEntry(call(true), 'owx-1', 0, AT), input, AT);
      assert.deepEqual(e.approver, want);
    });

  // Entries recorded before `approver` existed: read from their events.
  const views: [string, Partial<LedgerEntry>, Approver | undefined][] = [
    ['new: a person named auto', { approvedBy: 'auto', approver: person }, person],
    [
      'old: auto-approved',
      { approvedBy: 'auto', events: [{ at: AT, type: 'auto_approved' }] },
      { kind: 'auto', why: 'policy' },
    ],
    ['old: a person named auto', { approvedBy: 'auto', events: [{ at: AT, type: 'approved', by: 'auto' }] }, person],
    [
      'old: by grant',
      { approvedBy: 'alice', grantId: 'g-1', events: [{ at: AT, type: 'approved' }] },
      { kind: 'auto', why: 'grant' },
    ],
    [
      'old: imported',
      { approvedBy: 'the previous runtime', events: [{ at: AT, type: 'imported' }] },
      { kind: 'auto', why: 'import' },
    ],
    ['not approved', { events: [{ at: AT, type: 'awaiting_approval' }] }, undefined],
  ];
  for (const [name, over, want] of views)
    it(`approverOf: ${name}`, () => {
      const e = entryIn('running', over);
      assert.deepEqual(approverOf(e), want);
      assert.equal(approvedByPerson(e), want?.kind === 'person');
      assert.equal(needsNoApproval(e), want?.kind === 'auto' && want.why === 'policy');
    });
});

describe('deciders: every client boundary refuses a reserved name in one line', () => {
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(tmpdir(), 'deciders-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const oneLine = (fn: () => unknown, re: RegExp) =>
    assert.throws(fn, (err: Error) => {
      assert.ok(!err.message.includes('\n'), err.message);
      assert.match(err.message, re);
      return true;
    });

  it('--by', () => {
    oneLine(() => checkBy('auto', 'ann'), /^`by`: 'auto' is reserved .*; set `by` or OPENWORKER_USER$/);
    assert.equal(checkBy('alice', 'ann'), 'alice');
  });
  it('the default approver', () => {
    const user = (OPENWORKER_USER: string) => settingsFrom({ OPENWORKER_USER, USER: 'bob' }).user;
    oneLine(
      () => checkBy(undefined, user('System')),
      /^the default approver \(OPENWORKER_USER, else USER\): 'System' is reserved/,
    );
    assert.equal(checkBy(undefined, user('ann')), 'ann');
    assert.equal(checkBy(undefined, settingsFrom({ USER: 'bob' }).user), 'bob');
  });
  it('an approvals token', () =>
    oneLine(() => createToken('auto', path.join(dir, 'tokens.json')), /^operator name 'auto' is reserved/));
  it('an approver key', () => oneLine(() => createApproverKey('policy', dir), /^key name 'policy' is reserved/));
  it('an approvers file', () =>
    oneLine(
      () => parseApprovers({ approvers: { grant: 'AAAA' } }, 'approvers.json'),
      /approver name 'grant' is reserved/,
    ));

  // The app's identities come from a token file (maybe hand-edited) or a trusted proxy's header.
  const proxied: [string, Record<string, string>, number, RegExp | undefined][] = [
    [
      'the proxy header names auto',
      { 'x-forwarded-user': 'auto' },
      403,
      /^operator name 'auto' is reserved .*sign in under a name of your own/,
    ],
    ['the proxy header names System', { 'x-forwarded-user': ' System ' }, 403, /^operator name 'System' is reserved/],
    [
      'a token file entry named grant',
      { authorization: 'Bearer owa_handmade' },
      403,
      /^operator name 'grant' is reserved/,
    ],
    ['the proxy header names alice', { 'x-forwarded-user': 'alice' }, 200, undefined],
  ];
  for (const [name, headers, status, error] of proxied)
    it(`the approvals app: ${name} → ${status}`, async () => {
      const file = path.join(dir, 'app-tokens.json');
      const sha256 = createHash('sha256').update('owa_handmade').digest('hex');
      writeFileSync(file, JSON.stringify({ tokens: [{ name: 'grant', sha256, createdAt: AT }] }));
      const app = approvalsApp({ client: {} as OpenWorkerClient, tokensFile: file, trustHeader: 'X-Forwarded-User' });
      const res = await app.request('/api/me', { headers });
      assert.equal(res.status, status);
      const body = (await res.json()) as { error?: string; name?: string };
      if (error) {
        assert.match(body.error!, error);
        assert.ok(!body.error!.includes('\n'));
      } else assert.equal(body.name, 'alice');
    });
});
