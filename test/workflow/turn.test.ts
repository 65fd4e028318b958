import { strict as assert } from 'node:assert';
import { z } from 'zod';
import { defineTool } from '../../activities/tool';
import { recoverSignal, approveSignal, steerSignal, turnStatusQuery } from '../../workflows/definitions';
import { unpairedToolCalls } from '../../workflows/transcript';
import type { LedgerEntry, ReconcileAnswer, TurnResult } from '../../workflows/types';
import { assertLive, until, useWorkflowTier } from './harness';

// The call lifecycle of the seed, run in process against a dev server: approve → dispatch → succeed,
// unknown → recovery_required → a person's decision (fenced retry, replaced retry, --now),
// unknown → reconcile, a person's retry that asks reconcile() first, and a cancel that meets a parked
// call or a decision in the same task.

type Mode = 'ok' | 'unknown';
const effects: string[] = [];
let mode: Mode = 'ok';
const send = defineTool({
  name: 'send',
  description: 'Sends a message (an external effect).',
  input: z.object({ to: z.string() }),
  timeouts: { startToClose: '1s', heartbeat: '1s' },
  target: (i) => i.to,
  execute({ to }, ctx) {
    effects.push(`${ctx.executionId}#${ctx.attempt}`);
    if (mode === 'unknown') throw new Error(`connection to ${to} reset after the request was written`);
    return { delivered: to };
  },
});

const steps = [{ toolCalls: [{ id: 'c1', name: 'send', arguments: { to: 'ann' } }] }, { text: 'done' }];

// A manual tool that can tell whether an execution ID was applied: a person decides, a retry asks it.
let answer: ReconcileAnswer = { status: 'not_applied' };
const asked: string[] = [];
const sendChecked = defineTool({
  ...send,
  name: 'send_checked',
  recovery: 'manual',
  reconcile(_input, ctx) {
    asked.push(ctx.executionId);
    return answer;
  },
});
const checkedSteps = [{ toolCalls: [{ id: 'c1', name: 'send_checked', arguments: { to: 'ann' } }] }, { text: 'done' }];
const types = (e: LedgerEntry): string[] => e.events.map((ev) => ev.type);
const at = (e: LedgerEntry, type: string, nth = 1): number =>
  Date.parse(String(e.events.filter((ev) => ev.type === type)[nth - 1]?.at));

describe('workflow tier: the call lifecycle in process', function () {
  this.timeout(60_000);
  const tier = useWorkflowTier();
  beforeEach(() => {
    effects.length = 0;
    asked.length = 0;
    mode = 'ok';
  });

  it('approve → dispatched → succeeded: one effect, the ledger tells the story', async () => {
    const h = await tier.start(steps);
    const r = await tier.withWorker([send], steps, async () => {
      await until(h, (s) => s.state === 'awaiting_approval', 'the call waits');
      await h.signal(approveSignal, { toolCallId: 'c1', by: 'alice' });
      return (await h.result()) as TurnResult;
    });
    assert.equal(r.state, 'completed');
    assert.deepEqual(types(r.ledger[0]!), ['awaiting_approval', 'approved', 'scheduled', 'dispatched', 'succeeded']);
    assert.equal(effects.length, 1);
    await assertLive(h, r);
  });

  /** Approves c1 with a tool that fails after writing its request, and waits until the call parks. */
  const parkUnknown = async (script = steps) => {
    const h = await tier.start(script);
    mode = 'unknown';
    await until(h, (s) => s.state === 'awaiting_approval', 'the call waits');
    await h.signal(approveSignal, { toolCallId: 'c1', by: 'alice' });
    const parked = await until(h, (s) => s.state === 'recovery_required', 'the call parks');
    assert.match(
      String(parked.ledger[0]!.events.at(-1)!.reason),
      /outcome unknown after dispatch: .*connection to ann reset/,
    );
    mode = 'ok';
    return h;
  };

  it('a decided retry waits out the last attempt (dispatch + start-to-close + 2 s), visibly, then runs once', async () => {
    const r = await tier.withWorker([send], steps, async () => {
      const h = await parkUnknown();
      await h.signal(recoverSignal, { toolCallId: 'c1', by: 'bob', decision: 'retry', park: 1 });
      const fenced = await until(
        h,
        (s) => s.ledger[0]!.events.some((e) => e.type === 'retry_fenced'),
        'the retry is fenced',
      );
      const e = fenced.ledger[0]!;
      assert.equal(Date.parse(String(e.events.at(-1)!.until)), at(e, 'dispatched') + 1000 + 2000);
      assert.equal(e.state, 'recovery_required');
      const result = (await h.result()) as TurnResult;
      await tier.record(h, 'turn-retry-fenced');
      return result;
    });
    const e = r.ledger[0]!;
    assert.equal(e.state, 'succeeded');
    assert.ok(at(e, 'scheduled', 2) >= at(e, 'dispatched') + 3000, 'the second run starts after the fence');
    assert.deepEqual(
      effects.map((x) => x.split('#')[1]),
      ['1', '2'],
    );
  });

  it('a newer decision during the fence replaces the retry: nothing runs again', async () => {
    const r = await tier.withWorker([send], steps, async () => {
      const h = await parkUnknown();
      await h.signal(recoverSignal, { toolCallId: 'c1', by: 'bob', decision: 'retry', park: 1 });
      await until(h, (s) => s.ledger[0]!.events.some((e) => e.type === 'retry_fenced'), 'the retry is fenced');
      await h.signal(recoverSignal, {
        toolCallId: 'c1',
        by: 'bob',
        decision: 'succeeded',
        reason: 'it arrived after all',
        park: 1,
      });
      const result = (await h.result()) as TurnResult;
      await tier.record(h, 'turn-retry-fence-replaced');
      return result;
    });
    assert.equal(r.ledger[0]!.state, 'succeeded');
    assert.equal(r.ledger[0]!.runs, 1);
    assert.equal(effects.length, 1);
    assert.deepEqual(
      r.decisions.map((d) => d.outcome),
      ['applied', 'applied', 'applied'],
    );
  });

  it('skipFence runs the retry at once, and the audit says so', async () => {
    const r = await tier.withWorker([send], steps, async () => {
      const h = await parkUnknown();
      await h.signal(recoverSignal, { toolCallId: 'c1', by: 'bob', decision: 'retry', park: 1, skipFence: true });
      return (await h.result()) as TurnResult;
    });
    const e = r.ledger[0]!;
    assert.ok(!types(e).includes('retry_fenced'));
    assert.equal(e.events.find((ev) => ev.type === 'recovery_decided')?.skipFence, true);
    assert.ok(at(e, 'scheduled', 2) < at(e, 'dispatched') + 3000);
    assert.equal(effects.length, 2);
  });

  it('a fenced retry of a tool with reconcile() asks it after the fence: applied → succeeded via reconcile, nothing sent again', async () => {
    answer = { status: 'applied', result: { delivered: 'ann', late: true } };
    const r = await tier.withWorker([sendChecked], checkedSteps, async () => {
      const h = await parkUnknown(checkedSteps);
      assert.equal((await h.query(turnStatusQuery)).ledger[0]!.hasReconcile, true);
      await h.signal(recoverSignal, { toolCallId: 'c1', by: 'bob', decision: 'retry', park: 1 });
      const result = (await h.result()) as TurnResult;
      await tier.record(h, 'turn-retry-asks-reconcile');
      return result;
    });
    const e = r.ledger[0]!;
    assert.deepEqual(types(e).slice(-6), [
      'recovery_required',
      'recovery_decided',
      'retry_fenced',
      'reconciling',
      'reconciled',
      'succeeded',
    ]);
    assert.ok(at(e, 'reconciling') >= Date.parse(String(e.events.find((ev) => ev.type === 'retry_fenced')!.until)));
    assert.deepEqual([e.state, e.events.at(-1)!.via, e.runs], ['succeeded', 'reconcile', 1]);
    assert.deepEqual(e.result, { delivered: 'ann', late: true });
    assert.deepEqual([effects.length, asked.length], [1, 1]);
  });

  it('a retry with --now asks too (without the wait): not applied → runs again', async () => {
    answer = { status: 'not_applied' };
    const r = await tier.withWorker([sendChecked], checkedSteps, async () => {
      const h = await parkUnknown(checkedSteps);
      await h.signal(recoverSignal, { toolCallId: 'c1', by: 'bob', decision: 'retry', park: 1, skipFence: true });
      return (await h.result()) as TurnResult;
    });
    const e = r.ledger[0]!;
    assert.deepEqual(types(e).slice(-7), [
      'recovery_required',
      'recovery_decided',
      'reconciling',
      'reconciled',
      'scheduled',
      'dispatched',
      'succeeded',
    ]);
    assert.deepEqual([e.state, e.events.at(-1)!.via, e.runs], ['succeeded', 'execute', 2]);
    assert.deepEqual([effects.length, asked.length], [2, 1]);
  });

  it('a retry whose reconcile() cannot tell parks again, saying so; the next retry asks again', async () => {
    answer = { status: 'unknown', reason: 'lookup answered 503' };
    const r = await tier.withWorker([sendChecked], checkedSteps, async () => {
      const h = await parkUnknown(checkedSteps);
      await h.signal(recoverSignal, { toolCallId: 'c1', by: 'bob', decision: 'retry', park: 1, skipFence: true });
      const again = await until(
        h,
        (s) => s.ledger[0]!.events.filter((ev) => ev.type === 'recovery_required').length === 2,
        'the call parks again',
      );
      assert.equal(again.ledger[0]!.state, 'recovery_required');
      assert.equal(
        again.ledger[0]!.events.at(-1)!.reason,
        'the retry decided by bob did not run: reconcile could not tell whether an earlier attempt was applied (lookup answered 503); decide again',
      );
      assert.equal(effects.length, 1, 'nothing was sent again');
      answer = { status: 'not_applied' };
      await h.signal(recoverSignal, { toolCallId: 'c1', by: 'bob', decision: 'retry', park: 2, skipFence: true });
      const result = (await h.result()) as TurnResult;
      await assertLive(h, result);
      await tier.record(h, 'turn-retry-asks-reconcile-unknown');
      return result;
    });
    assert.deepEqual([r.ledger[0]!.state, r.ledger[0]!.runs], ['succeeded', 2]);
    assert.deepEqual([effects.length, asked.length], [2, 2]);
  });

  it('a cancel while parked ends the turn cancelled; a decision after it is not applied', async () => {
    const r = await tier.withWorker([send], steps, async () => {
      const h = await parkUnknown();
      await h.cancel();
      await h.signal(recoverSignal, { toolCallId: 'c1', by: 'bob', decision: 'retry', park: 1 });
      return until(
        h,
        (s) => s.state === 'cancelled' && s.decisions.length === 2,
        'the turn is cancelled and the late decision audited',
      );
    });
    assert.equal(r.ledger[0]!.state, 'recovery_required');
    assert.deepEqual(r.decisions.at(-1)!.outcome, 'ignored');
    assert.match(r.decisions.at(-1)!.why!, /not applied: the turn is cancelled/);
    assert.equal(effects.length, 1);
  });

  it('an approval and a cancel in one workflow task: nothing runs, and the approval is audited as not applied', async () => {
    const h = await tier.start(steps);
    await tier.withWorker([send], steps, () => until(h, (s) => s.state === 'awaiting_approval', 'the call waits'));
    await h.signal(approveSignal, { toolCallId: 'c1', by: 'alice' });
    await h.cancel();
    const s = await tier.withWorker([send], steps, () =>
      until(h, (x) => x.state === 'cancelled', 'the turn ends cancelled'),
    );
    assert.equal(effects.length, 0);
    assert.deepEqual(
      s.decisions.map((d) => [d.kind, d.outcome, d.why]),
      [['approve', 'ignored', 'not applied: the turn is cancelled before the call ran']],
    );
    await assertLive(h, s);
  });

  // Issue #40 hole 3: a message steered into the turn, then no model call answered after it (an approve
  // and a cancel in one task; a model call that fails): the turn must not report it as taken, nor keep it
  // in its output, so the session runs it as a turn of its own.
  for (const [how, cancel, script] of [
    ['an approval and a cancel in one workflow task', true, steps],
    ['the next model call failing', false, steps.slice(0, 1)],
  ] as const)
    it(`a steered message, then ${how}: the turn did not take it`, async () => {
      const h = await tier.start(script);
      await tier.withWorker([send], [...script], async () => {
        await until(h, (s) => s.state === 'awaiting_approval', 'the call waits');
        await h.signal(steerSignal, { messageId: 'm1', text: 'and cc carol' });
        // The steer lands in a task of its own, before the next: a model call after it could take it.
        await until(h, (s) => s.state === 'awaiting_approval', 'the turn takes the steer in');
      });
      await h.signal(approveSignal, { toolCallId: 'c1', by: 'alice' });
      if (cancel) await h.cancel();
      const r = await tier.withWorker([send], [...script], () => h.result() as Promise<TurnResult>);
      assert.equal(r.state, cancel ? 'cancelled' : 'failed', r.error);
      assert.equal(effects.length, cancel ? 0 : 1);
      assert.equal(r.steered, undefined, 'no model call answered after the message');
      assert.deepEqual(
        r.messages.filter((m) => m.role === 'user').map((m) => m.content),
        ['go'],
        'the message stays out of the turn’s output',
      );
      assert.deepEqual(unpairedToolCalls(r.messages), []);
      await assertLive(h, r);
    });

  // Issue #27 hole 4: `auto` was both the ledger's sentinel for "no approval needed" and a name a
  // person could approve under; the approval was then not seen as a person's, and a cancel in the
  // same task left it audited as applied although the call never ran.
  it('a person named auto: an approve by `auto` and a cancel in one workflow task are refused and audited, nothing applied', async () => {
    const h = await tier.start(steps);
    await tier.withWorker([send], steps, () => until(h, (s) => s.state === 'awaiting_approval', 'the call waits'));
    // No worker runs now: both land in the next workflow task, the signal first.
    await h.signal(approveSignal, { toolCallId: 'c1', by: 'auto', decisionId: 'd-auto' });
    await h.cancel();
    const s = await tier.withWorker([send], steps, () =>
      until(h, (x) => x.state === 'cancelled', 'the turn ends cancelled'),
    );
    assert.equal(effects.length, 0);
    assert.deepEqual(
      s.decisions.map((d) => [d.kind, d.by, d.decisionId, d.outcome]),
      [['approve', 'auto', 'd-auto', 'ignored']],
      'recorded once, never applied',
    );
    assert.match(s.decisions[0]!.why!, /^refused approve: by 'auto' is reserved for decisions no person made/);
    const e = s.ledger[0]!;
    assert.equal(e.approver, undefined);
    assert.ok(!types(e).includes('approved'), types(e).join(' '));
    await assertLive(h, s);
    await tier.record(h, 'turn-reserved-name-cancel');
  });

  for (const skipFence of [true, false]) {
    it(`a retry${skipFence ? ' (skipping the fence)' : ''} and a cancel in one workflow task: cancelled, re-parked, audited, never wedged`, async () => {
      const h = await tier.withWorker([send], steps, parkUnknown);
      // No worker runs now: both land in the next workflow task, the signal first.
      await h.signal(recoverSignal, {
        toolCallId: 'c1',
        by: 'bob',
        decision: 'retry',
        park: 1,
        ...(skipFence ? { skipFence } : {}),
      });
      await h.cancel();
      const s = await tier.withWorker([send], steps, () =>
        until(h, (x) => x.state === 'cancelled', 'the turn ends cancelled'),
      );
      const e = s.ledger[0]!;
      assert.equal(e.state, 'recovery_required');
      assert.equal(effects.length, 1, 'the retry never ran');
      const recover = s.decisions.find((d) => d.kind === 'recover')!;
      assert.equal(recover.outcome, 'ignored');
      assert.match(recover.why!, /not applied: the turn is cancelled/);
      if (skipFence)
        assert.match(String(e.events.at(-1)!.reason), /the turn was cancelled before the retry decided by bob ran/);
      await assertLive(h, s);
      await tier.record(h, skipFence ? 'turn-retry-cancel-same-task' : 'turn-fenced-retry-cancel-same-task');
    });
  }
});
