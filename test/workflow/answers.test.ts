import { strict as assert } from 'node:assert';
import type { WorkflowHandle } from '@temporalio/client';
import { eventName } from '../../bench/events';
import { askUserTool } from '../../activities/tools/askUser';
import type { Tool } from '../../activities/tool';
import { pastDeadline } from '../../workflows/answers';
import { answerSignal } from '../../workflows/definitions';
import type { TurnResult } from '../../workflows/types';
import { assertLive, until, useWorkflowTier } from './harness';

// ask_user's deadline in process against a dev server: the timer and an answer that meet in one
// workflow task, which happens when no worker runs at the deadline.

const askUser = askUserTool as unknown as Tool;
const question = { question: 'Proceed?', timeoutSeconds: 3 };
const steps = [{ toolCalls: [{ id: 'q1', name: 'ask_user', arguments: question }] }, { text: 'went on without' }];

/** The history's event names, once `pred` holds of them (the server writes them with no worker running); bounded. */
async function eventsOnceThey(h: WorkflowHandle, pred: (names: string[]) => boolean, what: string): Promise<string[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const names = ((await h.fetchHistory()).events ?? []).map(eventName);
    if (pred(names)) return names;
    if (Date.now() > deadline) throw new Error(`${what}: not within 20 s; history ${names.join(' ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('workflow tier: ask_user deadline', function () {
  this.timeout(60_000);
  const tier = useWorkflowTier();

  // Issue #40 hole 6: the answer was handled first (signals come first in a task) and applied,
  // although the deadline had fired; whether it counted depended on a worker being up.
  it('the deadline fires while no worker runs, then an answer comes: one task takes both, the deadline wins, the answer is audited as not applied', async () => {
    const h = await tier.start(steps);
    await tier.withWorker([askUser], steps, () => until(h, (s) => s.state === 'awaiting_answer', 'the question waits'));
    // No worker runs now: the server fires the timer, then takes the answer; one task is pending for both.
    await eventsOnceThey(h, (n) => n.includes('TIMER_FIRED'), 'the deadline fires');
    await h.signal(answerSignal, { toolCallId: 'q1', by: 'ann', answer: 'yes', decisionId: 'late' });
    const names = await eventsOnceThey(h, (n) => n.includes('WORKFLOW_EXECUTION_SIGNALED'), 'the answer is in');
    const fired = names.indexOf('TIMER_FIRED');
    assert.ok(!names.slice(fired).includes('WORKFLOW_TASK_STARTED'), `one task for both: ${names.join(' ')}`);

    const r = await tier.withWorker([askUser], steps, async () => (await h.result()) as TurnResult);
    assert.equal(r.state, 'completed');
    assert.equal(r.text, 'went on without');
    const e = r.ledger[0]!;
    assert.equal(e.state, 'failed');
    assert.match(e.error ?? '', /^no answer came within 3 seconds/);
    assert.equal(e.answeredBy, undefined);
    assert.deepEqual(
      r.decisions.map((d) => [d.kind, d.by, d.decisionId, d.outcome, d.why]),
      [['answer', 'ann', 'late', 'ignored', pastDeadline(question)]],
    );
    await assertLive(h, r);
  });
});
