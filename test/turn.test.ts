import { strict as assert } from 'node:assert';
import { approve, recover, reject } from '../client/decisions';
import { ApplicationFailure } from '@temporalio/common';
import { WorkflowFailedError } from '@temporalio/client';
import { sendMessage, sessionStatus, turnStatus } from '../client/session';
import { messageIdFor } from '../activities/tools/sendEmail';
import {
  approveSignal,
  rejectSignal,
  decisionsSignal,
  messageSignal,
  recoverSignal,
  sessionWorkflowId,
  turnWorkflowId,
} from '../workflows/definitions';
import { runCli } from './support/processes';
import { useWorld } from './support/world';
import { emailCall, eventually, scripted, startTurn, uniq } from './support/scenario';
import { recordHistory } from './support/histories';
import { eventsForCall } from './support/eventCounts';

// End to end: a real dev server, a real worker process, real SMTP and HTTP.

const email = (id: string, to?: string) => emailCall(id, to, { subject: 'Launch', body: 'We launch on Monday.' });

describe('turns end to end', function () {
  this.timeout(90_000);
  const w = useWorld();
  const worker = (model: string) => w.worker(model);

  it('runs a read-only turn without asking anyone; a further read call costs one history event', async () => {
    const sessionId = uniq('read');
    const lookup = (id: string) => ({ id, name: 'lookup_contact', arguments: { name: 'Bob' } });
    await worker(
      scripted([
        { text: 'Looking Bob up.', toolCalls: [lookup('c1')] },
        { text: 'Bob is bob@example.com.' },
        { text: 'Twice.', toolCalls: [lookup('c2'), lookup('c3')] },
        { text: 'Still bob@example.com.' },
      ]),
    );
    const t = await startTurn(w.c, sessionId, 'what is the address of Bob?');
    assert.equal(t.state, 'completed');
    assert.equal(t.text, 'Bob is bob@example.com.');
    assert.equal(t.ledger.length, 1);
    const [e] = t.ledger;
    assert.equal(e!.state, 'succeeded');
    assert.equal(e!.approvedBy, 'auto');
    assert.deepEqual(e!.result, { name: 'Bob', email: 'bob@example.com' });
    assert.equal(t.decisions.length, 0);
    const t2 = await startTurn(w.c, sessionId, 'check again, twice');
    assert.deepEqual(
      t2.ledger.map((x) => x.state),
      ['succeeded', 'succeeded'],
    );
    // The cost of durability for a read call (see docs/performance.md): the difference between two
    // turns of the same shape, one with a further read call. A read runs as a local activity: its
    // marker is the one event, in the workflow task that scheduled it.
    const history = async (id: string) => (await w.c.client.workflow.getHandle(id).fetchHistory()).events ?? [];
    const [one, two] = await Promise.all([history(t.workflowId), history(t2.workflowId)]);
    // A workflow task the server timed out (a sticky queue not polled within 1 s on a busy machine)
    // is scheduled again: two events that say nothing about what a read costs.
    // So is a local-activity heartbeat: reads outlasting most of the task's timeout complete the task
    // with only their markers and ask for a new one (three events after the markers, no new command).
    const heartbeats = (evs: typeof one) =>
      evs.filter((ev, i) => {
        if (!ev.workflowTaskScheduledEventAttributes) return false;
        let j = i - 1;
        while (j >= 0 && evs[j]!.markerRecordedEventAttributes) j--;
        return j < i - 1 && j >= 0 && !!evs[j]!.workflowTaskCompletedEventAttributes;
      }).length;
    const cost = (evs: typeof one) =>
      evs.length - 2 * evs.filter((ev) => ev.workflowTaskTimedOutEventAttributes).length - 3 * heartbeats(evs);
    const types = (evs: typeof one) => evs.map((ev) => ev.eventType).join(',');
    assert.equal(cost(two) - cost(one), 1, `one more read call, one more event:\n${types(one)}\n${types(two)}`);
    assert.ok(!two.some((ev) => ev.activityTaskScheduledEventAttributes?.activityType?.name === 'executeTool'));
    await recordHistory(t2.workflowId, 'turn-local-reads');
  });

  it('approve → execute → final answer, with one real email', async () => {
    const sessionId = uniq('approve');
    await worker(scripted([{ text: 'Sending.', toolCalls: [email('c1')] }, { text: 'Sent.' }]));
    const parked = await startTurn(w.c, sessionId, 'tell bob we launch monday');
    assert.equal(parked.state, 'awaiting_approval');
    const e = parked.ledger[0]!;
    assert.equal(e.state, 'awaiting_approval');
    assert.equal(w.sink.deliveries(messageIdFor(e.executionId)), 0, 'nothing is sent before the approval');
    const res = await runCli(['approve', sessionId, 'c1', '--by', 'alice', '--task-queue', w.taskQueue]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /approve c1: applied/);
    const done = await eventually(async () => {
      const s = await turnStatus(w.c, parked.workflowId);
      return s.closed && s;
    }, 'turn completes');
    assert.equal(done.state, 'completed');
    assert.equal(done.text, 'Sent.');
    const after = done.ledger[0]!;
    assert.equal(after.state, 'succeeded');
    assert.equal(after.approvedBy, 'alice');
    assert.equal(after.attempts, 1);
    assert.equal(after.dispatched, true);
    assert.equal(w.sink.deliveries(messageIdFor(after.executionId)), 1);
    // The execution ID is the activity ID: find it in the turn's history.
    const history = await w.c.client.workflow.getHandle(parked.workflowId).fetchHistory();
    const scheduled = history.events!.filter(
      (ev) => ev.activityTaskScheduledEventAttributes?.activityType?.name === 'executeTool',
    );
    assert.deepEqual(
      scheduled.map((ev) => ev.activityTaskScheduledEventAttributes!.activityId),
      [after.executionId],
    );
    // The park before the approval kept the inbox rows in memo: one upsert. Baseline 1 asks no patch:
    // no marker anywhere in the turn (docs/performance.md, "Per cause").
    assert.equal(history.events!.filter((ev) => ev.workflowPropertiesModifiedEventAttributes).length, 1);
    assert.equal(
      history.events!.filter((ev) => ev.markerRecordedEventAttributes?.markerName === 'core_patch').length,
      0,
    );
    // Approval signal → result processed: 11 events; see docs/performance.md.
    const events = await eventsForCall(w.c, parked.workflowId, after.executionId, true);
    assert.equal(events.length, 11, events.join(' '));
    await recordHistory(parked.workflowId, 'turn-approved-send-email');
    await recordHistory(sessionWorkflowId(sessionId), 'session-one-turn');
  });

  it('approves every call of a response with one signal: one event, one workflow task, each email once', async () => {
    const sessionId = uniq('batch');
    const to = ['ann@example.com', 'bob@example.com', 'cy@example.com'];
    await worker(
      scripted([
        { text: 'Sending three.', toolCalls: to.map((addr, i) => email(`c${i + 1}`, addr)) },
        { text: 'Sent all three.' },
      ]),
    );
    const parked = await startTurn(w.c, sessionId, 'tell the team we launch monday');
    assert.deepEqual(
      parked.ledger.map((e) => e.state),
      ['awaiting_approval', 'awaiting_approval', 'awaiting_approval'],
    );
    // A malformed batch from any client is recorded and changes nothing.
    await w.c.client.workflow.getHandle(parked.workflowId).signal(decisionsSignal, { decisions: 'all' } as never);
    const res = await runCli(['approve', sessionId, 'c1', 'c2', 'c3', '--by', 'alice', '--task-queue', w.taskQueue]);
    assert.equal(res.code, 0, res.stderr);
    assert.deepEqual(
      res.stdout
        .trim()
        .split('\n')
        .map((l) => l.replace(/ \(.*$/, '')),
      ['approve c1: applied', 'approve c2: applied', 'approve c3: applied'],
    );
    const done = await eventually(async () => {
      const s = await turnStatus(w.c, parked.workflowId);
      return s.closed && s;
    }, 'turn completes');
    assert.equal(done.state, 'completed');
    assert.deepEqual(
      done.ledger.map((e) => [e.state, e.approvedBy]),
      to.map(() => ['succeeded', 'alice']),
    );
    for (const e of done.ledger) assert.equal(w.sink.deliveries(messageIdFor(e.executionId)), 1);
    assert.equal(done.decisions[0]!.kind, 'decisions');
    assert.match(done.decisions[0]!.why!, /malformed decisions/);
    const history = await w.c.client.workflow.getHandle(parked.workflowId).fetchHistory();
    const signals = history.events!.filter(
      (ev) => ev.workflowExecutionSignaledEventAttributes?.signalName === 'decisions',
    );
    assert.equal(signals.length, 2, 'the malformed batch and the approval: one signal each');
    // From the approval to the task that processes the last result: at most 38 events for three
    // calls (11 for a call approved alone). Results may share tasks, so not exact.
    const spans = await Promise.all(done.ledger.map((e) => eventsForCall(w.c, parked.workflowId, e.executionId, true)));
    const total = Math.max(...spans.map((s) => s.length));
    assert.ok(total <= 38, `three calls approved at once cost ${total} events: ${spans.at(-1)!.join(' ')}`);
    await recordHistory(parked.workflowId, 'turn-approve-batch');
  });

  it('reject: nothing is sent and the model is told who rejected it', async () => {
    const sessionId = uniq('reject');
    await worker(scripted([{ toolCalls: [email('c1')] }, { text: 'Understood, not sending.' }]));
    const parked = await startTurn(w.c, sessionId, 'email bob');
    const out = await reject(w.c, { sessionId, toolCallId: 'c1', by: 'carol', reason: 'not yet' });
    assert.equal(out.outcome, 'applied');
    const done = await eventually(async () => {
      const s = await turnStatus(w.c, parked.workflowId);
      return s.closed && s;
    }, 'turn completes');
    assert.equal(done.ledger[0]!.state, 'rejected');
    assert.equal(done.ledger[0]!.rejectedBy, 'carol');
    assert.equal(w.sink.deliveries(messageIdFor(done.ledger[0]!.executionId)), 0);
    const result = await w.c.client.workflow.getHandle(parked.workflowId).result();
    const toolMsg = result.messages.find((m: { role: string }) => m.role === 'tool');
    assert.match(toolMsg.content, /not executed: rejected by carol: not yet/);
  });

  it('every bad decision is ignored, recorded with why, and changes nothing', async () => {
    const sessionId = uniq('bad-decisions');
    await worker(scripted([{ toolCalls: [email('c1'), email('c2', 'dan@example.com')] }, { text: 'ok' }]));
    const parked = await startTurn(w.c, sessionId, 'email bob and dan');
    const handle = w.c.client.workflow.getHandle(parked.workflowId);
    const ignored = async (p: Promise<{ outcome: string; why?: string }>, why: RegExp) => {
      const d = await p;
      assert.equal(d.outcome, 'ignored', JSON.stringify(d));
      assert.match(d.why!, why);
    };
    await assert.rejects(
      approve(w.c, { sessionId, toolCallId: 'nope', by: 'alice' }),
      /no tool call 'nope' in .*waiting there: c1, c2/,
    );
    await handle.signal(approveSignal, { toolCallId: 'nope', by: 'alice' }); // a raw client skips that check
    await handle.signal(approveSignal, { toolCallId: 'c1', by: 'alice', executionId: 'owx-from-another-turn' });
    await ignored(
      approve(w.c, { sessionId, toolCallId: 'c1', by: 'alice', argsDigest: 'sha256:00' }),
      /argsDigest does not match/,
    );
    // The client refuses a recovery decision for a call that is not parked; a raw signal is ignored.
    await assert.rejects(
      recover(w.c, { sessionId, toolCallId: 'c1', by: 'alice', decision: 'retry' }),
      /call 'c1' is awaiting_approval, not recovery_required/,
    );
    await handle.signal(recoverSignal, { toolCallId: 'c1', by: 'alice', decision: 'retry' });
    await handle.signal(approveSignal, { toolCallId: 'c1' } as never); // no `by`: malformed, from a raw client
    await handle.signal('approve', 'yes please' as never);
    assert.equal(parked.ledger[0]!.state, 'awaiting_approval');
    // A signal cannot answer its sender: the inbox and `show` say what was not applied, and why.
    const inboxOut = await eventually(async () => {
      const r = await runCli(['inbox', '--session', sessionId, '--task-queue', w.taskQueue]);
      return / c1 .*\n.*\n\s+\w+ c1( by \w+)? at \S+ not applied: /.test(r.stdout) && r.stdout;
    }, 'the inbox names the last decision on c1 that was not applied');
    assert.match(inboxOut, /not applied: /);
    const shown = await runCli(['show', sessionId, '--task-queue', w.taskQueue]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(
      shown.stdout,
      /approve c1 by alice at \S+ not applied: stale: decided for execution owx-from-another-turn/,
    );
    assert.match(shown.stdout, /approve c1 by alice at \S+ not applied: argsDigest does not match/);
    // A good approval with the right digest, then duplicates and conflicts.
    const ok = await approve(w.c, {
      sessionId,
      toolCallId: 'c1',
      by: 'alice',
      argsDigest: parked.ledger[0]!.argsDigest,
    });
    assert.equal(ok.outcome, 'applied');
    // The library reads the ledger first and says the call was decided; a raw client's signal is
    // judged by the turn, which records why it changed nothing.
    await assert.rejects(approve(w.c, { sessionId, toolCallId: 'c1', by: 'bob' }), /approved by alice/);
    await assert.rejects(reject(w.c, { sessionId, toolCallId: 'c1', by: 'bob' }), /approved by alice/);
    await handle.signal(approveSignal, { toolCallId: 'c1', by: 'bob' });
    await handle.signal(rejectSignal, { toolCallId: 'c1', by: 'bob' });
    const s = await eventually(async () => {
      const st = await turnStatus(w.c, parked.workflowId);
      return st.ledger[0]!.state === 'succeeded' && st;
    }, 'c1 succeeds');
    await assert.rejects(
      recover(w.c, { sessionId, toolCallId: 'c1', by: 'bob', decision: 'succeeded' }),
      /call 'c1' is succeeded, not recovery_required/,
    );
    const malformed = s.decisions.filter((d) => d.outcome === 'ignored' && d.why?.startsWith('malformed'));
    assert.equal(malformed.length, 2, JSON.stringify(s.decisions));
    const why = (re: RegExp) => s.decisions.some((d) => d.outcome === 'ignored' && re.test(d.why ?? ''));
    assert.ok(why(/unknown tool call 'nope'/), JSON.stringify(s.decisions));
    assert.ok(why(/late: call 'c1' is awaiting_approval, not recovery_required/), JSON.stringify(s.decisions));
    assert.ok(why(/stale: decided for execution owx-from-another-turn/), JSON.stringify(s.decisions));
    await eventually(async () => {
      const st = await turnStatus(w.c, parked.workflowId);
      const seen = (re: RegExp) => st.decisions.some((d) => d.outcome === 'ignored' && re.test(d.why ?? ''));
      return (
        seen(/duplicate: call 'c1' was already approved by alice/) &&
        seen(/conflicting: call 'c1' was already approved by alice/)
      );
    }, 'the duplicate and the conflicting decision are recorded');
    // The CLI says so too, with a non-zero exit.
    const cli = await runCli(['approve', sessionId, 'c1', '--by', 'eve', '--task-queue', w.taskQueue]);
    assert.equal(cli.code, 3);
    assert.match(cli.stderr, /^error: call 'c1' .*approved by alice.*: there is nothing to approve/m);
    await reject(w.c, { sessionId, toolCallId: 'c2', by: 'alice' });
    const done = await eventually(async () => {
      const st = await turnStatus(w.c, parked.workflowId);
      return st.closed && st;
    }, 'turn completes');
    assert.equal(done.state, 'completed');
    assert.equal(w.sink.deliveries(messageIdFor(done.ledger[0]!.executionId)), 1, 'exactly one email for c1');
    assert.equal(w.sink.deliveries(messageIdFor(done.ledger[1]!.executionId)), 0, 'none for the rejected c2');
    await recordHistory(parked.workflowId, 'turn-bad-decisions');
  });

  it('bad model output becomes error results, never executions', async () => {
    const sessionId = uniq('bad-model');
    await worker(
      scripted([
        {
          toolCalls: [
            { id: 'a', name: 'no_such_tool', arguments: {} },
            { id: 'b', name: 'lookup_contact', arguments: { nam: 'typo' } },
            { id: 'c', name: 'charge_card', arguments: { customer: 'x', amount: 5 } },
            { id: 'c', name: 'charge_card', arguments: { customer: 'x', amount: 5 } },
            { id: 'd', name: 'lookup_contact', arguments: '{not json' },
          ],
        },
        { text: 'I will fix my calls.' },
      ]),
    );
    const before = w.payments.ledger().requests.length;
    const t = await startTurn(w.c, sessionId, 'do things');
    assert.equal(t.state, 'completed');
    assert.deepEqual(
      t.ledger.map((e) => [e.toolCallId, e.state]),
      [
        ['a', 'invalid'],
        ['b', 'invalid'],
        ['c', 'invalid'],
        ['d', 'invalid'],
      ],
    );
    assert.match(t.ledger[0]!.error!, /unknown tool 'no_such_tool'; available tools: .*lookup_contact/);
    assert.match(t.ledger[1]!.error!, /invalid arguments for 'lookup_contact': name/);
    assert.match(t.ledger[2]!.error!, /appears 2 times in one response/);
    assert.match(t.ledger[3]!.error!, /not valid JSON/);
    assert.equal(w.payments.ledger().requests.length, before, 'no request reached the payments API');
    const result = await w.c.client.workflow.getHandle(t.workflowId).result();
    const toolMsgs = result.messages.filter((m: { role: string }) => m.role === 'tool');
    assert.equal(toolMsgs.length, 4, 'one error result per distinct call id');
    assert.ok(toolMsgs.every((m: { isError?: boolean }) => m.isError));
  });

  it("a turn's --max-iterations caps it; the next turn runs on the default, past the old 12; bad options are refused", async () => {
    const sessionId = uniq('cap');
    const lookup = (i: number) => ({
      toolCalls: [{ id: `l${i}`, name: 'lookup_contact', arguments: { name: `N${i}` } }],
    });
    // The model wants a lookup per step: 2 steps in turn 1 (capped), 13 and an answer in turn 2, then one answer.
    const steps = [...Array.from({ length: 15 }, (_, i) => lookup(i)), { text: 'All 13 looked up.' }, { text: 'Hi.' }];
    await worker(scripted(steps));
    // A raw start with bad session limits fails at once with why (the library refuses them before sending).
    const badStart = uniq('cap-start');
    const raw = await w.c.client.workflow.start('session', {
      workflowId: sessionWorkflowId(badStart),
      taskQueue: w.taskQueue,
      args: [{ sessionId: badStart, options: { maxIterations: 'many' as unknown as number } }],
      workflowExecutionTimeout: '30 seconds',
    });
    const q = ['--task-queue', w.taskQueue];
    const r = await runCli(['turn', sessionId, 'look up 3 people', '--max-iterations', '2', '--wait', ...q]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /\nerror: iteration cap \(2\) reached; raise it with the --max-iterations option \(at most 200\), or start a new turn to continue\n/,
    );
    const t = await turnStatus(w.c, turnWorkflowId(sessionId, 1));
    assert.equal(t.state, 'failed');
    assert.match(t.error!, /^iteration cap \(2\) reached; raise it with the `maxIterations` option/);
    assert.equal(t.iteration, 2);
    assert.deepEqual(
      t.ledger.map((e) => e.state),
      ['succeeded', 'invalid'],
      "the capped response's call is not executed",
    );
    assert.match(t.ledger[1]!.error!, /iteration cap \(2\)/);
    // No options: the session's default (none given), 40 model calls, not turn 1's 2 nor the old 12.
    const t2 = await startTurn(w.c, sessionId, 'look up 13 people', 60_000);
    assert.equal(t2.state, 'completed', t2.error);
    assert.equal(t2.iteration, 14);
    assert.equal(t2.ledger.length, 13);
    await recordHistory(t2.workflowId, 'turn-iteration-default-40');
    // A raw client's bad options: refused with why, the session takes the next message.
    const session = w.c.client.workflow.getHandle(sessionWorkflowId(sessionId));
    await session.signal(messageSignal, { text: 'more', messageId: 'bad-options', options: { maxIterations: 0 } });
    const refused = await eventually(
      async () => (await sessionStatus(w.c, sessionId)).refused?.find((x) => x.messageId === 'bad-options'),
      'the refusal',
    );
    assert.equal(refused.reason, 'options.maxIterations must be a whole number from 1 to 200, got 0');
    // Session limits are set when a message starts the session: a running one would drop them unsaid.
    await assert.rejects(
      sendMessage(w.c, { sessionId, text: 'hi', sessionOptions: { maxIterations: 5 } }),
      /session '.*' already runs and keeps the limits it started with; limits in `sessionOptions` apply only when a message starts a session/,
    );
    const t3 = await startTurn(w.c, sessionId, 'hi');
    assert.equal(t3.state, 'completed');
    assert.equal(t3.turn, 3, 'neither refused message became a turn');
    await recordHistory(sessionWorkflowId(sessionId), 'session-message-options');
    await assert.rejects(
      raw.result(),
      (err: unknown) =>
        err instanceof WorkflowFailedError &&
        err.cause instanceof ApplicationFailure &&
        err.cause.type === 'BadInput' &&
        err.cause.message === "session refused: options.maxIterations must be a whole number from 1 to 200, got 'many'",
    );
    await recordHistory(sessionWorkflowId(badStart), 'session-refused-options');
  });

  it('show --json and the OpenWorkerState search attribute tell the same story', async () => {
    const sessionId = uniq('show');
    await worker(
      scripted([
        { toolCalls: [{ id: 'r1', name: 'lookup_contact', arguments: { name: 'Ann' } }] },
        { text: 'Ann found.' },
        { toolCalls: [email('e1')] },
        { text: 'done' },
      ]),
    );
    await startTurn(w.c, sessionId, 'find ann');
    const parked = await startTurn(w.c, sessionId, 'email bob');
    assert.equal(parked.workflowId, turnWorkflowId(sessionId, 2));
    const query = `OpenWorkerSession = "${sessionId}" AND OpenWorkerState = "awaiting_approval"`;
    const found = await eventually(async () => {
      const ids: string[] = [];
      for await (const wf of w.c.client.workflow.list({ query })) ids.push(wf.workflowId);
      return ids.length > 0 && ids;
    }, 'visibility shows the parked turn');
    assert.deepEqual(found, [parked.workflowId]);
    const res = await runCli(['--json', 'show', sessionId, '--task-queue', w.taskQueue]);
    assert.equal(res.code, 0, res.stderr);
    const view = JSON.parse(res.stdout);
    assert.equal(view.sessionId, sessionId);
    assert.deepEqual(
      view.turns.map((t: { n: number; workflowId: string; state: string }) => [t.n, t.workflowId, t.state]),
      [
        [1, turnWorkflowId(sessionId, 1), 'completed'],
        [2, turnWorkflowId(sessionId, 2), 'awaiting_approval'],
      ],
    );
    assert.deepEqual(
      view.executions.map((e: { toolCallId: string; state: string; turnWorkflowId: string }) => [
        e.toolCallId,
        e.state,
        e.turnWorkflowId,
      ]),
      [
        ['r1', 'succeeded', turnWorkflowId(sessionId, 1)],
        ['e1', 'awaiting_approval', turnWorkflowId(sessionId, 2)],
      ],
    );
    for (const e of view.executions)
      for (const k of ['executionId', 'tool', 'attempts', 'events']) assert.ok(k in e, `execution has ${k}`);
    const inbox = await runCli(['--json', 'inbox', '--session', sessionId, '--task-queue', w.taskQueue]);
    assert.deepEqual(
      JSON.parse(inbox.stdout).calls.map((i: { toolCallId: string; state: string }) => [i.toolCallId, i.state]),
      [['e1', 'awaiting_approval']],
    );
  });
});
