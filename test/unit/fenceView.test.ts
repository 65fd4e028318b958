import { strict as assert } from 'node:assert';
import { formatInbox, formatSession, formatTurn } from '../../client/format';
import type { SessionView } from '../../client/inspect';
import { inboxItemOf } from '../../client/inspect';
import type { WaitedTurn } from '../../client/session';
import { applyLedger, newEntry, pendingFence } from '../../workflows/ledger';
import type { LedgerEntry } from '../../workflows/types';
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
  inboxItemOf({ sessionId: 's1', turn: 1 }, 'wf-1', { ...e, state: 'recovery_required' });

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
