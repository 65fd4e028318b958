import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { sessionStatus, turnStatus } from '../client/session';
import { turnWorkflowId } from '../workflows/definitions';
import { CLI } from './support/processes';
import { emailCall, eventually, scripted, uniq } from './support/scenario';
import type { Terminal } from './support/tmux';
import { startTerminal } from './support/tmux';
import { useWorld } from './support/world';
import { startFakeModelServer } from './support/fakeModelServer';

// The chat REPL in a real pseudo-terminal (tmux): inline approval with "always for this target", a
// worker SIGKILLed after the email went out, the recovery decision in the REPL, the grant at work
// on the next turn, Ctrl-C cancelling a turn, and leaving without cancelling anything.

describe('chat (in a pseudo-terminal)', function () {
  this.timeout(180_000);
  const w = useWorld();
  let term: Terminal | undefined;
  afterEach(() => term?.close());
  before(function () {
    try {
      execFileSync('tmux', ['-V'], { stdio: 'ignore' });
    } catch {
      if (process.env.CI) throw new Error('CI must have tmux: .ci/run installs it');
      console.log('      (skipped: no tmux on PATH; .ci/run installs it)');
      this.skip();
    }
  });

  const email = (id: string, to?: string) => emailCall(id, to, { subject: 'Launch', body: 'We launch on Monday.' });
  /** When the mail sink received the call's message: the tool ran (the ledger learns it only from the outcome). */
  const sentAt = async (sessionId: string, turn: number, toolCallId: string): Promise<number> => {
    const t = await turnStatus(w.c, turnWorkflowId(sessionId, turn));
    const executionId = t.ledger.find((e) => e.toolCallId === toolCallId)?.executionId;
    const at = w.sink.messages().find((m) => m.messageId === `${executionId}@openworker-temporal`)?.receivedAt;
    assert.ok(at, `no message received for ${toolCallId} (${executionId})`);
    return Date.parse(at);
  };

  it('approve inline, crash, recover in the REPL, the grant applies next turn, Ctrl-C cancels, leaving cancels nothing', async () => {
    const script = scripted([
      { toolCalls: [email('c1', 'ann@example.com')] },
      { text: 'Sent to Ann.' },
      { toolCalls: [email('c2', 'ann@example.com')] },
      { text: 'Sent to Ann again.' },
      { toolCalls: [email('c3', 'ben@example.com')] },
      { text: 'Sent to Ben.' },
      { toolCalls: [email('c4', 'cy@example.com')] },
      { text: 'unused' },
    ]);
    const w1 = await w.worker(script, { faults: 'tool.after_execute@send_email' });
    const sessionId = uniq('chat');
    term = startTerminal('chat', [
      process.execPath,
      CLI,
      'chat',
      sessionId,
      '--by',
      'alice',
      '--task-queue',
      w.taskQueue,
    ]);
    await term.waitFor(/you>$/);

    term.type('email ann about the launch');
    await term.waitFor(
      /\? approve send_email → ann@example\.com \[c1\]\n {4}to: ann@example\.com\n {4}subject: Launch\n {4}body: We launch on Monday\.\n {2}y = approve once · a = always for this session \(send_email\) · t = always for ann@example\.com · n = reject\napprove\? \[y\/a\/t\/n\]$/,
    );
    term.save('chat-1-approval');
    const pressed = Date.now();
    term.type('t');
    const executionId = await w1.faultReached('tool.after_execute');
    const latencies = [(await sentAt(sessionId, 1, 'c1')) - pressed];
    await term.waitFor(/granted g-[0-9a-f]+: send_email → ann@example\.com, for this session/);

    // The email went out; the worker dies before it can tell anyone.
    await w1.kill('SIGKILL');
    await w.worker(script);
    const parked = await term.waitFor(/needs a recovery decision[\s\S]*decide\? \[r\/s\/f\]$/, { timeoutMs: 60_000 });
    assert.match(parked, /! send_email → ann@example\.com \[c1\] needs a recovery decision: its outcome is unknown/);
    assert.match(parked, /dispatch marker: yes \(the tool was called\)/);
    assert.match(parked, new RegExp(`execution ID \\(the idempotency key\\): ${executionId}`));
    term.save('chat-2-recovery');
    assert.equal(w.sink.deliveries(`<${executionId}@openworker-temporal>`), 1);
    term.type('s');
    await term.waitFor(/assistant: Sent to Ann\.\nyou>$/);

    let mark = term.screen().length;
    term.type('and again, to ann');
    await term.waitFor(
      /→ send_email → ann@example\.com \[c2\] approved by grant g-[0-9a-f]+\n✓ send_email → ann@example\.com \[c2\] succeeded[\s\S]*assistant: Sent to Ann again\.\nyou>$/,
      { from: mark },
    );

    mark = term.screen().length;
    term.type('now ben');
    await term.waitFor(/\? approve send_email → ben@example\.com \[c3\][\s\S]*approve\? \[y\/a\/t\/n\]$/, {
      from: mark,
    });
    const pressed2 = Date.now();
    term.type('y');
    await term.waitFor(/assistant: Sent to Ben\.\nyou>$/, { from: mark });
    latencies.push((await sentAt(sessionId, 3, 'c3')) - pressed2);

    mark = term.screen().length;
    term.type('and cy');
    await term.waitFor(/\? approve send_email → cy@example\.com \[c4\][\s\S]*approve\? \[y\/a\/t\/n\]$/, {
      from: mark,
    });
    term.key('C-c');
    await term.waitFor(/\^C cancelling the turn…[\s\S]*turn 4 cancelled; the session takes the next message\nyou>$/, {
      from: mark,
    });
    term.save('chat-3-session');

    term.key('C-d');
    await term.waitFor(/left session .*; running turns keep running/);
    const s = await sessionStatus(w.c, sessionId);
    assert.deepEqual(
      s.turns.map((t) => t.state),
      ['completed', 'completed', 'completed', 'cancelled'],
    );
    assert.equal(
      w.sink.deliveries(`<${executionId}@openworker-temporal>`),
      1,
      'recovered as succeeded: never sent twice',
    );
    console.log(`      approval keypress → message sent: ${latencies.map((l) => `${l} ms`).join(', ')}`);
  });

  it('leaving while a call waits for approval leaves the turn parked; coming back resumes it', async () => {
    await w.worker(scripted([{ toolCalls: [email('c1', 'dee@example.com')] }, { text: 'Sent to Dee.' }]));
    const sessionId = uniq('chat-leave');
    term = startTerminal('leave', [process.execPath, CLI, 'chat', sessionId, '--task-queue', w.taskQueue]);
    await term.waitFor(/you>$/);
    term.type('email dee');
    await term.waitFor(/approve\? \[y\/a\/t\/n\]$/);
    term.key('C-d');
    await term.waitFor(/left session/);
    term.close();
    const t = await turnStatus(w.c, turnWorkflowId(sessionId, 1));
    assert.equal(t.state, 'awaiting_approval', 'leaving the REPL never cancels a turn');

    term = startTerminal('back', [process.execPath, CLI, 'chat', sessionId, '--task-queue', w.taskQueue]);
    await term.waitFor(/\(turn 1 is running; following it\)[\s\S]*approve\? \[y\/a\/t\/n\]$/);
    term.type('maybe');
    await term.waitFor(/answer y, a, t or n\napprove\? \[y\/a\/t\/n\]$/);
    term.type('n');
    await term.waitFor(/reason \(the model sees it\):$/);
    term.type('not today');
    await term.waitFor(
      /✗ send_email → dee@example\.com \[c1\] not executed: rejected by .*: not today[\s\S]*assistant: Sent to Dee\./,
    );
    await eventually(async () => (await turnStatus(w.c, turnWorkflowId(sessionId, 1))).closed, 'the turn ends');
  });
  it('a line typed while the turn runs steers it: the next model call reads it, and no turn of its own starts', async () => {
    const fake = await startFakeModelServer();
    try {
      await w.worker(`openai-compatible:fake-model@${fake.url}`);
      let release: () => void = () => undefined;
      const hold = new Promise<void>((r) => (release = r));
      const lookup = { id: 'l1', name: 'lookup_contact', arguments: { name: 'Ann' } };
      fake.enqueue({ toolCalls: [lookup], hold }, { text: 'Ann is ann@example.com; I will keep it short.' });
      const sessionId = uniq('chat-steer');
      term = startTerminal('steer', [process.execPath, CLI, 'chat', sessionId, '--task-queue', w.taskQueue]);
      await term.waitFor(/you>$/);
      term.type('find ann');
      await eventually(async () => fake.requests.length === 1, 'the model call reaches the provider');
      term.type('keep it short');
      await term.waitFor(/\(given to turn 1: its next model call reads it/);
      // Let the turn take the signal in before the model answers (else the next call may be too soon for it).
      await eventually(async () => {
        const events = (await w.c.client.workflow.getHandle(turnWorkflowId(sessionId, 1)).fetchHistory()).events ?? [];
        const at = events.findIndex((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'steer');
        return at >= 0 && events.slice(at).some((e) => e.workflowTaskCompletedEventAttributes);
      }, 'the turn takes the steer signal in');
      release();
      await term.waitFor(
        /assistant: Ann is ann@example\.com; I will keep it short\.\n\(turn 1 took your message "keep it short"; it starts no turn of its own\)\nyou>$/,
      );
      assert.deepEqual(
        fake.requests[1]!.body.messages.filter((m) => m.role === 'user').map((m) => m.content),
        ['find ann', 'keep it short'],
      );
      const s = await sessionStatus(w.c, sessionId);
      assert.equal(s.turns.length, 1);
    } finally {
      await fake.close();
    }
  });
});
