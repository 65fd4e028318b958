import { strict as assert } from 'node:assert';
import { approve } from '../client/decisions';
import { showSession } from '../client/inspect';
import { sendMessage, sessionStatus, waitForTurn } from '../client/session';
import { sessionWorkflowId } from '../workflows/definitions';
import { runClis } from './support/processes';
import { useWorld } from './support/world';
import { eventually, scripted, startTurn, uniq } from './support/scenario';

describe('sessions', function () {
  this.timeout(90_000);
  const w = useWorld();

  it('queues messages that arrive during a turn, dedupes resends, and keeps everything across continue-as-new', async () => {
    const sessionId = uniq('queue');
    await w.worker(
      scripted([
        {
          toolCalls: [
            { id: 'm1', name: 'send_email', arguments: { to: 'bob@example.com', subject: 'One', body: '1' } },
          ],
        },
        { text: 'first done' },
        { text: 'second done' },
        { text: 'third done' },
      ]),
    );
    // A short run length forces continue-as-new after two turns.
    const first = await w.c.client.workflow.start('session', {
      workflowId: sessionWorkflowId(sessionId),
      taskQueue: w.taskQueue,
      args: [{ sessionId, turnsPerRun: 2 }],
    });
    const parked = await startTurn(w.c, sessionId, 'first');
    assert.equal(parked.state, 'awaiting_approval');
    // queue: true waits for a turn of its own instead of steering the running turn.
    await sendMessage(w.c, { sessionId, text: 'second', messageId: 'msg-2', queue: true });
    await sendMessage(w.c, { sessionId, text: 'second', messageId: 'msg-2', queue: true }); // a client retry
    const third = await sendMessage(w.c, { sessionId, text: 'third', queue: true });
    const queued = await eventually(async () => {
      const s = await sessionStatus(w.c, sessionId);
      return s.pending.length === 2 && s;
    }, 'two messages queued');
    assert.deepEqual(
      queued.pending.map((p) => [p.text, p.queue, p.steering]),
      [
        ['second', true, undefined],
        ['third', true, undefined],
      ],
    );
    assert.equal(queued.activeTurn, 1);
    await approve(w.c, { sessionId, toolCallId: 'm1', by: 'alice' });
    const last = await waitForTurn(w.c, { sessionId, messageId: third.messageId, timeoutMs: 60_000 });
    assert.equal(last.state, 'completed');
    assert.equal(last.turn, 3);
    const described = await w.c.client.workflow.getHandle(sessionWorkflowId(sessionId)).describe();
    assert.notEqual(described.runId, first.firstExecutionRunId, 'the session continued as new');
    const view = await showSession(w.c, sessionId);
    assert.deepEqual(
      view.transcript.filter((m) => m.role === 'user').map((m) => m.content),
      ['first', 'second', 'third'],
    );
    assert.deepEqual(
      view.turns.map((t) => [t.n, t.state]),
      [
        [1, 'completed'],
        [2, 'completed'],
        [3, 'completed'],
      ],
    );
    assert.equal(view.executions.length, 1);
  });

  it('a provider that restarts its tool call ids every turn does not break the transcript', async () => {
    const sessionId = uniq('reused-ids');
    const lookup = (name: string) => ({ toolCalls: [{ id: 'call_0', name: 'lookup_contact', arguments: { name } }] });
    await w.worker(
      scripted([
        lookup('Ann'),
        { text: 'Ann found' },
        lookup('Bob'),
        { text: 'Bob found' },
        { text: 'third turn fine' },
      ]),
    );
    assert.equal((await startTurn(w.c, sessionId, 'find ann')).state, 'completed');
    const second = await startTurn(w.c, sessionId, 'find bob');
    assert.equal(second.state, 'completed');
    assert.deepEqual(
      second.ledger.map((e) => e.toolCallId),
      ['call_0#1'],
    );
    const third = await startTurn(w.c, sessionId, 'anything else?');
    assert.equal(third.state, 'completed');
    assert.equal(third.text, 'third turn fine');
  });

  it('gives a clear one-line error for bad input, and leaves nothing wedged', async () => {
    const cases: [string[], RegExp][] = [
      [['turn', 'bad id!', 'hi'], /invalid session id 'bad id!'/],
      [['turn', 'ok-id', '   '], /the message is empty/],
      [['recover', 'ok-id', 'c1', '--decision', 'maybe'], /argument 'maybe' is invalid.*retry, succeeded, failed/],
      [['recover', 'ok-id', 'c1', '--decision', 'succeeded', '--result', '{oops'], /not valid JSON/],
      [['approve', 'no-such-session-xyz', 'c1'], /session 'no-such-session-xyz' not found/],
      [['approve', 'ok-id', 'c1', '--turn', '0'], /--turn must be a positive integer/],
      [
        ['worker', '--model', 'gpt-5'],
        /unknown --model 'gpt-5'; use one of: openai:<model>, .*scripted:<file.json> \(a provider's model goes after its name, e.g. openai:gpt-5\)/,
      ],
      [['worker', '--tools', './nope.mjs'], /--tools .\/nope.mjs: file not found/],
      [['frobnicate'], /unknown command 'frobnicate'/],
    ];
    // Each is refused before anything is sent, so they run side by side.
    const results = await runClis(cases.map(([args]) => [...args, '--task-queue', w.taskQueue]));
    for (const [i, [args, want]] of cases.entries()) {
      const res = results[i]!;
      assert.notEqual(res.code, 0, `${args.join(' ')} should fail`);
      const lines = res.stderr.trim().split('\n');
      assert.equal(lines.length, 1, `${args.join(' ')}: one line expected:\n${res.stderr}`);
      assert.match(lines[0]!, want, `${args.join(' ')}: ${res.stderr}`);
    }
  });
});
