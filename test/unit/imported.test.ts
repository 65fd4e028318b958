import { strict as assert } from 'node:assert';
import { importedEntry } from '../../workflows/imported';
import type { CallState, ImportDisposition } from '../../workflows/types';
import { AT, planned, spec } from './helpers';

const EXEC = 'owx-0123456789abcdef0123456789abcdef';

describe('importedEntry: what an imported call without a result becomes', () => {
  type Tool = 'external' | 'external-no-approval' | 'read' | 'unknown';
  const call = (tool: Tool) =>
    tool === 'external'
      ? planned()
      : tool === 'external-no-approval'
        ? planned({ spec: spec({ requiresApproval: false }) })
        : tool === 'read'
          ? planned({ name: 'lookup', spec: spec({ name: 'lookup', effect: 'read', requiresApproval: false }) })
          : planned({ name: 'gone', spec: undefined, invalid: "unknown tool 'gone'; available tools: send_email" });

  const cases: {
    disposition: ImportDisposition;
    tool: Tool;
    state: CallState;
    parks: boolean;
    approvedBy?: string;
    error?: RegExp;
  }[] = [
    { disposition: 'recovery_required', tool: 'external', state: 'running', parks: true },
    { disposition: 'recovery_required', tool: 'external-no-approval', state: 'running', parks: true },
    { disposition: 'recovery_required', tool: 'read', state: 'running', parks: false, approvedBy: 'auto' },
    {
      disposition: 'recovery_required',
      tool: 'unknown',
      state: 'invalid',
      parks: false,
      error: /^outcome unknown: .*may have run.*unknown tool 'gone'.*check before doing it again$/,
    },
    { disposition: 'awaiting_approval', tool: 'external', state: 'awaiting_approval', parks: false },
    {
      disposition: 'awaiting_approval',
      tool: 'external-no-approval',
      state: 'running',
      parks: false,
      approvedBy: 'auto',
    },
    {
      disposition: 'awaiting_approval',
      tool: 'unknown',
      state: 'invalid',
      parks: false,
      error: /^unknown tool 'gone'/,
    },
    { disposition: 'run', tool: 'external', state: 'running', parks: false, approvedBy: 'alice' },
    { disposition: 'run', tool: 'read', state: 'running', parks: false, approvedBy: 'auto' },
    {
      disposition: 'rejected',
      tool: 'external',
      state: 'rejected',
      parks: false,
      error: /^not executed: rejected before the import by alice$/,
    },
    { disposition: 'rejected', tool: 'unknown', state: 'rejected', parks: false, error: /rejected before the import/ },
  ];

  for (const c of cases) {
    it(`${c.disposition} × ${c.tool} → ${c.state}${c.parks ? ', parked in recovery_required' : ''}`, () => {
      const { entry, park } = importedEntry(
        call(c.tool),
        {
          call: { id: 'call_1', name: 'x', arguments: {} },
          disposition: c.disposition,
          why: 'the file says so',
          by: 'alice',
        },
        EXEC,
        AT,
      );
      assert.equal(entry.state, c.state);
      assert.equal(entry.executionId, EXEC);
      assert.equal(entry.iteration, 0, 'imported calls belong to no model response of this turn');
      assert.equal(Boolean(park), c.parks);
      if (park) assert.equal(park, 'imported: the file says so');
      assert.deepEqual(entry.events[0], {
        at: AT,
        type: 'imported',
        disposition: c.disposition,
        why: 'the file says so',
        by: 'alice',
      });
      if (c.approvedBy) assert.equal(entry.approvedBy, c.approvedBy);
      if (c.error) assert.match(entry.error ?? '', c.error);
      else assert.equal(entry.error, undefined);
    });
  }

  it('a parked call with no known approver claims none', () => {
    const { entry, park } = importedEntry(
      planned(),
      { call: { id: 'call_1', name: 'send_email', arguments: {} }, disposition: 'recovery_required', why: 'no result' },
      EXEC,
      AT,
    );
    assert.ok(park);
    assert.equal(entry.approvedBy, undefined);
  });

  it('an approved-and-never-dispatched call with no named approver is approved by "the previous runtime"', () => {
    const { entry } = importedEntry(
      planned(),
      { call: { id: 'call_1', name: 'send_email', arguments: {} }, disposition: 'run', why: 'marked' },
      EXEC,
      AT,
    );
    assert.equal(entry.approvedBy, 'the previous runtime');
    assert.equal(entry.dispatched, false);
  });

  it("under an approval policy, the old runtime's approval is an unsigned claim: the call asks again", () => {
    const approval = { signed: true, approvers: [], allowed: ['alice'], maxAgeMs: 60_000 };
    const { entry, park } = importedEntry(
      planned({ approval }),
      { call: { id: 'call_1', name: 'send_email', arguments: {} }, disposition: 'run', why: 'marked', by: 'bob' },
      EXEC,
      AT,
    );
    assert.equal(entry.state, 'awaiting_approval');
    assert.equal(entry.approvedBy, undefined);
    assert.equal(park, undefined);
    assert.deepEqual(entry.approval, approval);
    const unsignedPolicy = importedEntry(
      planned({ approval: { ...approval, signed: false } }),
      { call: { id: 'call_1', name: 'send_email', arguments: {} }, disposition: 'run', why: 'marked', by: 'bob' },
      EXEC,
      AT,
    );
    assert.equal(unsignedPolicy.entry.state, 'running', 'keys without a policy: the approval stands');
  });
});
