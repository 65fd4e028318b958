import { strict as assert } from 'node:assert';
import { activeGrants, addGrant, grantFor, grantsUpdate, revokeGrant } from '../../workflows/grants';
import type { Grant } from '../../workflows/types';

const AT = '2024-01-01T00:00:00.000Z';
const LATER = '2024-01-01T00:01:00.000Z';
const toolWide: Grant = { id: 'g-1', tool: 'send_email', by: 'alice', at: AT };
const toAnn: Grant = { id: 'g-2', tool: 'create_payment', target: 'cus_ann', by: 'alice', at: AT };

describe('grants: which new call a standing approval covers', () => {
  const cases: [string, Grant[], { tool: string; target?: string }, string | undefined][] = [
    ['tool grant, any target', [toolWide], { tool: 'send_email', target: 'bob@example.com' }, 'g-1'],
    ['tool grant, call without target', [toolWide], { tool: 'send_email' }, 'g-1'],
    ['tool grant, another tool', [toolWide], { tool: 'create_payment', target: 'cus_ann' }, undefined],
    ['target grant, same target', [toAnn], { tool: 'create_payment', target: 'cus_ann' }, 'g-2'],
    ['target grant, another target', [toAnn], { tool: 'create_payment', target: 'cus_bob' }, undefined],
    ['target grant, call without target', [toAnn], { tool: 'create_payment' }, undefined],
    [
      'target grant, a target that only starts the same',
      [toAnn],
      { tool: 'create_payment', target: 'cus_ann2' },
      undefined,
    ],
    [
      'revoked grant',
      [{ ...toolWide, revokedAt: LATER, revokedBy: 'bob' }],
      { tool: 'send_email', target: 'x' },
      undefined,
    ],
    ['no grants', [], { tool: 'send_email' }, undefined],
    [
      'target grant, a target cut at 200 characters',
      [{ ...toAnn, target: 'x'.repeat(200) }],
      { tool: 'create_payment', target: 'x'.repeat(200) },
      undefined,
    ],
  ];
  for (const [name, grants, call, expected] of cases) {
    it(`${name} → ${expected ?? 'asks'}`, () => assert.equal(grantFor(grants, call)?.id, expected));
  }
});

describe('grants: the grant and revoke signals (any client may send them)', () => {
  const bad: [string, unknown, RegExp][] = [
    ['not an object', 'send_email', /payload must be an object/],
    ['an array', [], /payload must be an object/],
    ['no grantId', { tool: 'send_email', by: 'a' }, /grantId/],
    ['no tool', { grantId: 'g', by: 'a' }, /tool must name a tool/],
    ['no by', { grantId: 'g', tool: 'send_email' }, /by must name who grants/],
    ['empty target', { grantId: 'g', tool: 'send_email', by: 'a', target: '' }, /target must be/],
    ['huge tool name', { grantId: 'g', tool: 'x'.repeat(201), by: 'a' }, /tool must name a tool/],
  ];
  for (const [name, raw, why] of bad) {
    it(`malformed grant (${name}) changes nothing`, () => {
      const r = addGrant([toolWide], raw, LATER);
      assert.equal(r.ok, false);
      assert.match(!r.ok ? r.why : '', why);
    });
  }

  it('adds a grant with who and when; a resent grant id adds nothing', () => {
    const r = addGrant(
      [],
      { grantId: 'g-9', tool: 'send_email', target: 'ann@example.com', by: 'alice', extra: 'ignored' },
      AT,
    );
    assert.ok(r.ok);
    assert.deepEqual(r.grants, [{ id: 'g-9', tool: 'send_email', target: 'ann@example.com', by: 'alice', at: AT }]);
    const again = addGrant(r.grants, { grantId: 'g-9', tool: 'other', by: 'mallory' }, LATER);
    assert.ok(again.ok);
    assert.deepEqual(again.grants, r.grants);
  });

  it('revokes: kept for the audit with who and when; revoking twice keeps the first', () => {
    const r = revokeGrant([toolWide, toAnn], { grantId: 'g-1', by: 'bob' }, LATER);
    assert.ok(r.ok);
    assert.deepEqual(r.grants[0], { ...toolWide, revokedAt: LATER, revokedBy: 'bob' });
    assert.deepEqual(r.grants[1], toAnn);
    const twice = revokeGrant(r.grants, { grantId: 'g-1', by: 'carol' }, '2024-01-02T00:00:00.000Z');
    assert.ok(twice.ok);
    assert.equal(twice.grant.revokedBy, 'bob');
  });

  it('revoking an unknown grant, or without by, is refused', () => {
    assert.match(
      (revokeGrant([toolWide], { grantId: 'g-x', by: 'bob' }, LATER) as { why: string }).why,
      /no grant g-x/,
    );
    assert.equal(revokeGrant([toolWide], { grantId: 'g-1' }, LATER).ok, false);
  });

  it('the turn keeps only well-formed, active grants', () => {
    const raw = [
      toolWide,
      { ...toAnn, revokedAt: LATER },
      { id: 'g-3', tool: 5, by: 'x' },
      null,
      'junk',
      { id: 'g-4', tool: 't', by: 'b', target: '' },
    ];
    assert.deepEqual(activeGrants(raw), [toolWide]);
    assert.deepEqual(activeGrants({ not: 'an array' }), []);
  });
});

describe('grants: the versioned list the session sends its turn', () => {
  const cases: [string, unknown, unknown][] = [
    ['a versioned list', { version: 3, grants: [toolWide] }, { version: 3, grants: [toolWide] }],
    ['a bare array (the first builds; no longer sent)', [toolWide], undefined],
    ['version 0', { version: 0, grants: [] }, undefined],
    ['no grants array', { version: 2 }, undefined],
    ['junk', 'x', undefined],
  ];
  for (const [name, raw, expected] of cases) it(name, () => assert.deepEqual(grantsUpdate(raw), expected));
});
