import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { approvalFor, parseApprovers } from '../../activities/approvers';
import { createApproverKey, signDecision } from '../../client/keys';
import type { EditCheck } from '../../workflows/edits';
import { editOf, editProblem, withEditNote } from '../../workflows/edits';
import { argsDigest } from '../../workflows/identity';
import { NOT_APPLIED_CANCELLED } from '../../workflows/intake';
import type { LedgerEntry, Message } from '../../workflows/types';
import { AT, entryIn, intakeOver, planned } from './helpers';

// Approve with edits (workflows/edits.ts, the intake's part in workflows/intake.ts): pure, by table.

const ORIGINAL = { to: 'bob@example.com', subject: 'hi' };
const EDITED = { to: 'bob@example.com', subject: 'hello' };
const D0 = argsDigest(ORIGINAL);
const D1 = argsDigest(EDITED);
const awaiting = (over: Partial<LedgerEntry> = {}) =>
  entryIn('awaiting_approval', { arguments: ORIGINAL, argsDigest: D0, target: 'bob@example.com', ...over });
const valid: EditCheck = { plan: planned({ arguments: EDITED, argsDigest: D1, target: 'bob@example.com' }) };
const invalid: EditCheck = {
  plan: planned({ arguments: { to: 7 }, argsDigest: 'sha256:x', invalid: "invalid arguments for 'send_email': to" }),
};

function setup(entry = awaiting()) {
  const ledger = new Map([['call_1', entry]]);
  const { intake, decisions } = intakeOver(ledger);
  intake.modelPending(false);
  return { ledger, decisions, intake, call: () => ledger.get('call_1')! };
}

describe('edits: editOf (what an approve asks of the arguments)', () => {
  const cases: { name: string; args?: Record<string, unknown>; edit: boolean }[] = [
    { name: 'no arguments: a plain approval', edit: false },
    {
      name: 'the same arguments (keys in another order): no edit',
      args: { subject: 'hi', to: 'bob@example.com' },
      edit: false,
    },
    { name: 'changed arguments: an edit bound to their digest', args: EDITED, edit: true },
  ];
  for (const c of cases)
    it(c.name, () => {
      const e = editOf(awaiting(), c.args ? { arguments: c.args } : {});
      assert.deepEqual(e, c.edit ? { arguments: c.args, digest: D1 } : undefined);
    });
});

describe('edits: editProblem (the worker’s verdict on the edited arguments)', () => {
  const cases: { name: string; check: EditCheck; why?: RegExp }[] = [
    { name: 'valid under the schema', check: valid },
    {
      name: 'failing the schema',
      check: invalid,
      why: /^edited arguments refused: invalid arguments for 'send_email'/,
    },
    { name: 'the check failed', check: { refused: 'no worker' }, why: /^no worker$/ },
    { name: 'another tool planned', check: { plan: planned({ name: 'other' }) }, why: /planned 'other'/ },
  ];
  for (const c of cases)
    it(c.name, () => {
      const why = editProblem({ tool: 'send_email' }, c.check);
      if (c.why) assert.match(why ?? '', c.why);
      else assert.equal(why, undefined);
    });
});

describe('edits: the intake', () => {
  it('an approve with edits waits for the check: nothing recorded, nothing audited', () => {
    const { intake, decisions, call } = setup();
    intake.decide('approve', { toolCallId: 'call_1', by: 'ann', arguments: EDITED });
    assert.deepEqual(intake.editPending('call_1'), { by: 'ann', arguments: EDITED, digest: D1 });
    assert.equal(call().state, 'awaiting_approval');
    assert.equal(decisions.length, 0);
  });

  it('a valid edit is recorded as edited (who, old and new digest), then approved; the execution ID stays', () => {
    const { intake, decisions, call } = setup();
    const executionId = call().executionId;
    intake.decide('approve', { toolCallId: 'call_1', by: 'ann', arguments: EDITED, decisionId: 'd1' });
    intake.editChecked('call_1', valid);
    const e = call();
    assert.equal(e.state, 'running');
    assert.equal(e.executionId, executionId);
    assert.deepEqual(e.arguments, EDITED);
    assert.equal(e.argsDigest, D1);
    assert.deepEqual(e.originalArguments, ORIGINAL);
    assert.equal(e.originalDigest, D0);
    assert.equal(e.editedBy, 'ann');
    assert.equal(e.approvedBy, 'ann');
    assert.deepEqual(
      e.events.slice(-2).map(({ at: _at, ...ev }) => ev),
      [
        { type: 'edited', by: 'ann', from: D0, to: D1, target: 'bob@example.com' },
        { type: 'approved', by: 'ann' },
      ],
    );
    assert.deepEqual(
      decisions.map((d) => [d.kind, d.outcome, d.decisionId]),
      [['approve', 'applied', 'd1']],
    );
    assert.equal(intake.editPending('call_1'), undefined);
  });

  it('an edit failing the schema is refused: recorded, audited, and the call still awaits approval', () => {
    const { intake, decisions, call } = setup();
    intake.decide('approve', { toolCallId: 'call_1', by: 'ann', arguments: { to: 7 } });
    intake.editChecked('call_1', invalid);
    const e = call();
    assert.equal(e.state, 'awaiting_approval');
    assert.deepEqual(e.arguments, ORIGINAL);
    assert.equal(e.argsDigest, D0);
    assert.equal(e.originalDigest, undefined);
    assert.equal(e.events.at(-1)!.type, 'decision_refused');
    assert.match(String(e.events.at(-1)!.why), /^edited arguments refused/);
    assert.deepEqual(
      decisions.map((d) => d.outcome),
      ['ignored'],
    );
    // The approval was not consumed: a plain approve still applies.
    intake.decide('approve', { toolCallId: 'call_1', by: 'bob' });
    assert.equal(call().state, 'running');
    assert.equal(call().approvedBy, 'bob');
  });

  it('decisions that arrive during the check are judged after it, as if the edit had applied at once', () => {
    const refusedEdit = setup();
    refusedEdit.intake.decide('approve', { toolCallId: 'call_1', by: 'ann', arguments: EDITED });
    refusedEdit.intake.decide('reject', { toolCallId: 'call_1', by: 'bob' });
    assert.equal(refusedEdit.decisions.length, 0, 'the reject waits');
    refusedEdit.intake.editChecked('call_1', invalid);
    assert.equal(refusedEdit.call().state, 'rejected');

    const appliedEdit = setup();
    appliedEdit.intake.decide('approve', { toolCallId: 'call_1', by: 'ann', arguments: EDITED });
    appliedEdit.intake.decide('reject', { toolCallId: 'call_1', by: 'bob' });
    appliedEdit.intake.decide('approve', { toolCallId: 'call_1', by: 'carl', arguments: { to: 'eve' } });
    appliedEdit.intake.editChecked('call_1', valid);
    assert.equal(appliedEdit.call().state, 'running');
    assert.deepEqual(appliedEdit.call().arguments, EDITED);
    assert.deepEqual(
      appliedEdit.decisions.map((d) => [d.by, d.outcome, d.why?.split(':')[0]]),
      [
        ['ann', 'applied', undefined],
        ['bob', 'ignored', 'conflicting'],
        ['carl', 'ignored', 'duplicate'],
      ],
    );
  });

  const refusals: { name: string; entry?: LedgerEntry; payload: Record<string, unknown>; why: RegExp }[] = [
    {
      name: 'arguments that are not an object',
      payload: { arguments: ['a'] },
      why: /^malformed approve: arguments must be an object/,
    },
    { name: 'arguments that are a string', payload: { arguments: '{}' }, why: /arguments must be an object/ },
    {
      name: 'bound to other arguments than those awaiting approval',
      payload: { arguments: EDITED, argsDigest: D1 },
      why: /^argsDigest does not match/,
    },
    {
      name: 'a call already approved (a duplicate keeps its semantics)',
      entry: entryIn('running', { approvedBy: 'carol' }),
      payload: { arguments: EDITED },
      why: /^duplicate/,
    },
    {
      name: 'a rejected call (conflicting)',
      entry: entryIn('rejected', { rejectedBy: 'bob' }),
      payload: { arguments: EDITED },
      why: /^conflicting/,
    },
  ];
  for (const c of refusals)
    it(`refused: ${c.name}, with nothing recorded`, () => {
      const { intake, decisions, call } = setup(c.entry);
      const before = call();
      intake.decide('approve', { toolCallId: 'call_1', by: 'ann', ...c.payload });
      assert.equal(intake.editPending('call_1'), undefined);
      assert.equal(decisions.length, 1);
      assert.match(decisions[0]!.why ?? '', c.why);
      assert.deepEqual(call(), before);
    });

  it('bound to the arguments the operator saw, an edit applies', () => {
    const { intake } = setup();
    intake.decide('approve', { toolCallId: 'call_1', by: 'ann', arguments: EDITED, argsDigest: D0 });
    assert.equal(intake.editPending('call_1')?.digest, D1);
  });

  it('the batch `decisions` signal carries an edit as the approve signal does', () => {
    const { intake } = setup();
    intake.decideMany({ decisions: [{ kind: 'approve', toolCallId: 'call_1', by: 'ann', arguments: EDITED }] });
    assert.equal(intake.editPending('call_1')?.digest, D1);
  });

  it('a call a grant approved while the edit was checked: the edit is a duplicate and records nothing', () => {
    const { intake, decisions, ledger, call } = setup();
    intake.decide('approve', { toolCallId: 'call_1', by: 'ann', arguments: EDITED });
    ledger.set('call_1', { ...call(), state: 'running', approvedBy: 'gus', approver: { kind: 'auto', why: 'grant' } });
    const before = call();
    intake.editChecked('call_1', valid);
    assert.deepEqual(call(), before);
    assert.match(decisions[0]!.why ?? '', /^duplicate: call 'call_1' was already approved by gus/);
  });

  it('a turn cancelled while the edit was checked: not applied, nothing recorded', () => {
    let cancelled = false;
    const ledger = new Map([['call_1', awaiting()]]);
    const { intake, decisions } = intakeOver(ledger, { cancelled: () => cancelled });
    intake.modelPending(false);
    intake.decide('approve', { toolCallId: 'call_1', by: 'ann', arguments: EDITED });
    cancelled = true;
    intake.editChecked('call_1', valid);
    assert.equal(ledger.get('call_1')!.state, 'awaiting_approval');
    assert.equal(ledger.get('call_1')!.events.length, awaiting().events.length);
    assert.deepEqual(
      decisions.map((d) => [d.outcome, d.why]),
      [['ignored', NOT_APPLIED_CANCELLED]],
    );
  });

  it('a turn that ends during the check audits the edit as not applied', () => {
    const { intake, decisions, call } = setup();
    intake.decide('approve', { toolCallId: 'call_1', by: 'ann', arguments: EDITED });
    intake.flush();
    assert.equal(call().state, 'awaiting_approval');
    assert.match(decisions[0]!.why ?? '', /^not applied: the turn ended/);
  });
});

describe('edits: signed approvals cover the edited arguments', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'openworker-edit-keys-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const alice = createApproverKey('alice', dir);
  const config = parseApprovers(
    { approvers: { alice: alice.publicKey }, policy: [{ tool: '*', approvers: ['alice'] }], maxAgeSeconds: 600 },
    'test',
  );
  const approval = approvalFor(config, 'send_email', 'bob@example.com');
  const signedOver = (digest: string) =>
    signDecision(
      alice,
      { executionId: awaiting().executionId, argsDigest: digest, decision: 'approve' },
      new Date(Date.parse(AT)),
    );

  const cases: { name: string; digest: string; applies: boolean; why?: RegExp }[] = [
    { name: 'signed over the edited digest: applies, signed', digest: D1, applies: true },
    { name: 'signed over the original digest: wrongly signed', digest: D0, applies: false, why: /^wrongly signed/ },
  ];
  for (const c of cases)
    it(c.name, () => {
      const { intake, decisions, call } = setup(awaiting({ approval }));
      intake.decide('approve', {
        toolCallId: 'call_1',
        by: 'alice',
        arguments: EDITED,
        signature: signedOver(c.digest),
      });
      if (!c.applies) {
        assert.equal(intake.editPending('call_1'), undefined);
        assert.match(decisions[0]!.why ?? '', c.why!);
        assert.equal(call().state, 'awaiting_approval');
        return;
      }
      intake.editChecked('call_1', { plan: { ...valid.plan, approval } });
      assert.equal(call().state, 'running');
      assert.equal(call().signedApproval?.keyId, alice.keyId);
      assert.equal(decisions[0]!.signedBy, alice.keyId);
    });

  it('unsigned, an edit is refused when the policy wants signatures', () => {
    const { intake, decisions } = setup(awaiting({ approval }));
    intake.decide('approve', { toolCallId: 'call_1', by: 'alice', arguments: EDITED });
    assert.match(decisions[0]!.why ?? '', /^unsigned/);
  });
});

describe('edits: the tool result tells the model the arguments that ran', () => {
  const result: Message = { role: 'tool', toolCallId: 'call_1', name: 'send_email', content: '{"ok":true}' };
  const error: Message = { ...result, content: 'Error: boom', isError: true };
  const edited = entryIn('succeeded', { arguments: EDITED, originalDigest: D0, editedBy: 'ann' });
  const cases: { name: string; m: Message; entry: LedgerEntry; content: string }[] = [
    { name: 'not edited: unchanged', m: result, entry: entryIn('succeeded'), content: '{"ok":true}' },
    {
      name: 'edited: a note with the arguments that ran, then the result',
      m: result,
      entry: edited,
      content:
        '[ann edited the arguments of this call before approving it; it ran with {"subject":"hello","to":"bob@example.com"}]\n{"ok":true}',
    },
    {
      name: 'edited and failed: the note, then the error',
      m: error,
      entry: edited,
      content:
        '[ann edited the arguments of this call before approving it; it ran with {"subject":"hello","to":"bob@example.com"}]\nError: boom',
    },
  ];
  for (const c of cases)
    it(c.name, () => {
      const m = withEditNote(c.m, c.entry);
      assert.equal(m.role === 'tool' && m.content, c.content);
      assert.equal(m.role === 'tool' && m.toolCallId, 'call_1', 'the pairing with the tool call stays');
      assert.equal(m.role === 'tool' && m.isError, c.m.role === 'tool' && c.m.isError);
    });
});
