import { strict as assert } from 'node:assert';
import { formatDecision, formatInbox, formatSession, formatTurn } from '../../cli/format';
import type { SessionView } from '../../client/inspect';
import { inboxItemOf } from '../../client/inspect';
import type { WaitedTurn } from '../../client/session';
import { renderDetails } from '../../workflows/details';
import { inboxRowOf } from '../../workflows/inboxRows';
import { applyLedger, newEntry, pendingFence, reconcileNote, retryNote } from '../../workflows/ledger';
import type { LedgerEntry, TurnStatus } from '../../workflows/types';
import { AT, planned } from './helpers';

// A decided retry that waits out the last attempt's window is visible where a person looks:
// `show`, `inbox` and a turn's status name the attempt, the time and who decided.

const UNTIL = '2024-01-01T00:02:07.000Z';
const PARK = 'outcome unknown after dispatch: heartbeat timeout (worker lost or stuck)';

function parked(): LedgerEntry {
  let e = newEntry(planned(), 'exec-1', 1, AT);
  e = applyLedger(e, { type: 'approved', by: 'alice' }, AT);
  e = applyLedger(e, { type: 'scheduled', activityId: 'exec-1-1' }, AT);
  e = applyLedger(e, { type: 'dispatched', activityId: 'exec-1-1', attempt: 1 }, AT);
  e = applyLedger(e, { type: 'outcome_unknown', reason: 'heartbeat timeout (worker lost or stuck)', attempt: 1 }, AT);
  return applyLedger(e, { type: 'recovery_required', reason: PARK }, AT);
}
function fenced(): LedgerEntry {
  const e = applyLedger(parked(), { type: 'recovery_decided', decision: 'retry', by: 'carol' }, AT);
  return applyLedger(e, { type: 'retry_fenced', until: UNTIL, attempt: 1, by: 'carol' }, AT);
}
const FENCE = `retry decided by carol, waiting out attempt 1 until ${UNTIL}`;

const session = (e: LedgerEntry): SessionView => ({
  sessionId: 's1',
  turns: [{ n: 1, workflowId: 'wf-1', state: 'running' }],
  executions: [{ ...e, turnWorkflowId: 'wf-1', turn: 1 }],
  transcript: [],
  pending: [],
});
const item = (e: LedgerEntry) =>
  inboxItemOf({ sessionId: 's1', turn: 1 }, 'wf-1', inboxRowOf({ ...e, state: 'recovery_required' }, []));

describe('the fence of a decided retry in show, inbox and a turn', () => {
  it('show names the attempt it waits out, until when, and who decided', () => {
    assert.ok(formatSession(session(fenced())).includes(FENCE), formatSession(session(fenced())));
    assert.ok(!formatSession(session(parked())).includes('waiting out'));
  });

  it('the inbox keeps the park reason and adds the fence', () => {
    const i = item(fenced());
    assert.deepEqual(i.fence, { until: UNTIL, attempt: 1, by: 'carol' });
    assert.equal(i.reason, PARK, 'the retry_fenced event must not hide why the call parked');
    const text = formatInbox([i]);
    assert.ok(text.includes(`why: ${PARK}`) && text.includes(FENCE), text);
    assert.equal(item(parked()).fence, undefined);
    assert.ok(!formatInbox([item(parked())]).includes('waiting out'));
  });

  it("a turn's status shows it under the parked call", () => {
    const turn = {
      workflowId: 'wf-1',
      sessionId: 's1',
      state: 'recovery_required',
      ledger: [fenced()],
    } as unknown as WaitedTurn;
    assert.ok(formatTurn(turn).includes(FENCE), formatTurn(turn));
  });

  it('a decision refused while the retry waits leaves the fence standing, and visible', () => {
    // A refusal changes nothing (the turn keeps waiting on the same timer), so the fence must still show.
    const refused = applyLedger(
      fenced(),
      { type: 'decision_refused', kind: 'recover', by: 'mallory', why: 'the approval policy needs a signed decision' },
      AT,
    );
    assert.deepEqual(pendingFence(refused), { until: UNTIL, attempt: 1, by: 'carol' });
    assert.ok(formatInbox([item(refused)]).includes(FENCE));
    const again = applyLedger(fenced(), { type: 'recovery_decided', decision: 'failed', by: 'dave' }, AT);
    assert.equal(pendingFence(again), undefined, 'a newer decision that applied replaces the fence');
  });

  it('once the retry runs, nothing claims a fence', () => {
    const running = applyLedger(fenced(), { type: 'scheduled', activityId: 'exec-1-2' }, AT);
    assert.ok(!formatSession(session(running)).includes('waiting out'));
  });
});

// Whether a retry asks reconcile() first is one fact of the entry (hasReconcile, from the tool's
// spec): every screen where a person decides prints the same line from it.
describe('what a retry does about an attempt that may still land, on every decision screen', () => {
  const withReconcile = (has: boolean): LedgerEntry => ({ ...parked(), hasReconcile: has });
  const NONE = 'send_email has no reconcile(): an earlier attempt may still land after its window';
  const ASKS = "a retry first asks send_email's reconcile() whether an earlier attempt was applied";

  it('newEntry keeps the spec’s hasReconcile; the note follows it', () => {
    assert.equal(parked().hasReconcile, false);
    assert.equal(
      newEntry(planned({ spec: { ...planned().spec!, hasReconcile: true } }), 'x', 1, AT).hasReconcile,
      true,
    );
    assert.ok(retryNote(withReconcile(false))!.startsWith(NONE));
    assert.ok(retryNote(withReconcile(true))!.startsWith(ASKS));
    assert.ok(retryNote(fenced())!.startsWith(NONE), 'also while a decided retry waits');
  });

  it('no note where nobody decides a retry: not parked, a read, an entry recorded before the field', () => {
    const { hasReconcile: _gone, ...old } = parked();
    const running = applyLedger(parked(), { type: 'scheduled', activityId: 'exec-1-2' }, AT);
    for (const e of [running, { ...parked(), effect: 'read' as const }, old as LedgerEntry])
      assert.equal(retryNote(e), undefined, JSON.stringify(e.state));
  });

  it('show, inbox, a turn, the Web UI details and the decision output print it', () => {
    for (const [has, line] of [
      [false, NONE],
      [true, ASKS],
    ] as const) {
      const e = withReconcile(has);
      const turn = { workflowId: 'wf-1', sessionId: 's1', state: 'recovery_required', ledger: [e] };
      assert.ok(formatSession(session(e)).includes(line), formatSession(session(e)));
      assert.ok(formatInbox([item(e)]).includes(line), formatInbox([item(e)]));
      assert.ok(formatTurn(turn as unknown as WaitedTurn).includes(line));
      const status = { ...turn, turn: 1, iteration: 1, decisions: [] } as unknown as TurnStatus;
      assert.ok(renderDetails(status).includes(`\`call_1\`: ${line}`), renderDetails(status));
      const d = { sessionId: 's1', toolCallId: 'c1', workflowId: 'wf-1', decisionId: 'd', outcome: 'applied' as const };
      assert.ok(formatDecision('recover', { ...d, retryNote: reconcileNote(e)! }).includes(line));
    }
  });
});
