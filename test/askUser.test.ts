import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { approvalsApp } from '../apps/approvals/app';
import { createToken } from '../apps/approvals/tokens';
import { answer } from '../client/answers';
import { cancelTurn } from '../client/cancel';
import { inbox } from '../client/inspect';
import { sessionStatus, turnStatus } from '../client/session';
import { reservedName } from '../workflows/deciders';
import { answerSignal, approveSignal } from '../workflows/definitions';
import { recordHistory } from './support/histories';
import { execFileSync } from 'node:child_process';
import { CLI, runCli } from './support/processes';
import type { Terminal } from './support/tmux';
import { startTerminal } from './support/tmux';
import { eventually, scripted, startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Ask the user (ask_user), end to end: a real dev server and worker process, the scripted model.

const ask = (id: string, args: Record<string, unknown>) => ({ id, name: 'ask_user', arguments: args });

describe('ask_user end to end', function () {
  this.timeout(60_000);
  const w = useWorld();

  it('the turn parks for the answer (inbox lists the question); an answer not among the choices is refused and the call keeps waiting; the CLI answer is the result the model sees', async () => {
    const sessionId = uniq('ask');
    const question = { question: 'Which day should we launch?', choices: ['Monday', 'Friday'] };
    await w.worker(scripted([{ text: 'Let me ask.', toolCalls: [ask('q1', question)] }, { text: 'Friday it is.' }]));
    const parked = await startTurn(w.c, sessionId, 'plan the launch');
    assert.equal(parked.state, 'awaiting_answer');
    const e = parked.ledger[0]!;
    assert.equal(e.state, 'awaiting_answer');
    assert.equal(e.runs, 0, 'asking runs no activity');
    const listed = await eventually(
      async () => (await inbox(w.c, { sessionId })).find((i) => i.toolCallId === 'q1'),
      'the inbox lists the question',
    );
    assert.equal(listed.state, 'awaiting_answer');
    assert.deepEqual(listed.question, question);
    assert.equal(listed.notification.park, 'question');
    const listedCli = await runCli(['inbox', '--session', sessionId, '--task-queue', w.taskQueue]);
    assert.match(
      listedCli.stdout,
      /^awaiting_answer .* q1 {2}ask_user\n.*\n {4}asks: Which day should we launch\? \(1\. Monday, 2\. Friday\)$/m,
    );

    // Not a choice: the library says so before sending; a raw signal is recorded, ignored, and changes nothing.
    await assert.rejects(
      answer(w.c, { sessionId, toolCallId: 'q1', answer: 'Sunday', by: 'ann' }),
      /not one of the choices/,
    );
    const handle = w.c.client.workflow.getHandle(parked.workflowId);
    await handle.signal(answerSignal, { toolCallId: 'q1', by: 'ann', answer: 'Sunday', decisionId: 'raw-sunday' });
    await handle.signal(answerSignal, { toolCallId: 'q1', by: '', answer: 'x', decisionId: 'raw-bad' } as never);
    const refused = await eventually(async () => {
      const s = await turnStatus(w.c, parked.workflowId);
      return s.decisions.filter((d) => d.kind === 'answer').length >= 2 && s;
    }, 'the raw answers are judged');
    assert.match(
      refused.decisions.find((d) => d.decisionId === 'raw-sunday')?.why ?? '',
      /^'Sunday' is not one of the choices: 1\. Monday, 2\. Friday/,
    );
    assert.match(refused.decisions.find((d) => d.decisionId === 'raw-bad')?.why ?? '', /^by must name who decided/);
    assert.equal(refused.ledger[0]!.state, 'awaiting_answer');
    // The approvals app's JSON API: refused with why (409), the call still asks.
    const dir = mkdtempSync(join(tmpdir(), 'openworker-ask-'));
    const tokensFile = join(dir, 'tokens.json');
    const app = approvalsApp({ client: w.c, tokensFile });
    const viaApi = await app.request('/api/answers', {
      method: 'POST',
      headers: { authorization: `Bearer ${createToken('bob', tokensFile)}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        executionId: e.executionId,
        answer: 'Tuesday',
        ref: { sessionId, turn: 1, toolCallId: 'q1' },
      }),
    });
    rmSync(dir, { recursive: true, force: true });
    assert.equal(viaApi.status, 409);
    assert.match(((await viaApi.json()) as { error: string }).error, /^'Tuesday' is not one of the choices/);

    // By its number, from the CLI: the choice is the result.
    const res = await runCli(['answer', sessionId, 'q1', '2', '--by', 'ann', '--task-queue', w.taskQueue]);
    assert.equal(res.code, 0, res.stderr + res.stdout);
    assert.match(res.stdout, /answer q1: applied/);
    const done = await turnClosed(w.c, parked);
    assert.equal(done.state, 'completed');
    assert.equal(done.text, 'Friday it is.');
    const after = done.ledger[0]!;
    assert.equal(after.state, 'succeeded');
    assert.equal(after.result, 'Friday');
    assert.equal(after.answeredBy, 'ann');
    assert.equal(after.runs, 0);
    // A second answer is refused with why.
    const again = await runCli(['answer', sessionId, 'q1', 'Monday', '--turn', '1', '--task-queue', w.taskQueue]);
    assert.equal(again.code, 3, again.stderr + again.stdout);
    assert.match(again.stderr + again.stdout, /already answered by ann/);
    const { transcript } = await eventually(async () => {
      const s = await sessionStatus(w.c, sessionId);
      return s.transcript.some((m) => m.role === 'tool') && s;
    }, 'the session keeps the turn');
    const result = transcript.find((m) => m.role === 'tool');
    assert.deepEqual(result, { role: 'tool', toolCallId: 'q1', name: 'ask_user', content: 'Friday' });
    await recordHistory(parked.workflowId, 'turn-ask-user');
  });

  // Issue #40 hole 4: choices 10, 1, 5 and the answer 1 recorded '10' (the first choice's number)
  // while '1' is the second choice's text, and the CLI said applied.
  it("numeric choices: an answer that is one choice's text and another's number is refused as ambiguous by the CLI and the turn; the number of the choice meant applies", async () => {
    const sessionId = uniq('ask-numbers');
    const question = { question: 'How many seats?', choices: ['10', '1', '5'] };
    await w.worker(scripted([{ toolCalls: [ask('q1', question)] }, { text: 'One seat.' }]));
    const parked = await startTurn(w.c, sessionId, 'book seats');
    assert.equal(parked.state, 'awaiting_answer');
    const ambiguous =
      /'1' is ambiguous: it is choice 2's text and choice 1's number; for '1' answer '2', for '10' answer '10'/;
    const cli = await runCli(['answer', sessionId, 'q1', '1', '--by', 'ann', '--task-queue', w.taskQueue]);
    assert.equal(cli.code, 3, cli.stderr + cli.stdout);
    assert.match(cli.stderr, ambiguous);
    // A raw signal, which nothing checks before sending: the turn refuses it the same way.
    const handle = w.c.client.workflow.getHandle(parked.workflowId);
    await handle.signal(answerSignal, { toolCallId: 'q1', by: 'ann', answer: '1', decisionId: 'raw-1' });
    const refused = await eventually(
      async () => (await turnStatus(w.c, parked.workflowId)).decisions.find((d) => d.decisionId === 'raw-1'),
      'the raw answer is judged',
    );
    assert.equal(refused.outcome, 'ignored');
    assert.match(refused.why ?? '', ambiguous);
    const res = await runCli(['answer', sessionId, 'q1', '2', '--by', 'ann', '--task-queue', w.taskQueue]);
    assert.equal(res.code, 0, res.stderr + res.stdout);
    assert.match(res.stdout, /answer q1: applied/);
    const done = await turnClosed(w.c, parked);
    assert.equal(done.ledger[0]!.result, '1');
    assert.equal(done.ledger[0]!.answeredBy, 'ann');
  });

  // Issue #40 hole 7: a raw answer by `auto` was applied, and the ledger said the system answered,
  // while the same turn refused a raw approve by `auto`.
  it('a raw answer under a reserved name is refused like a raw approve under it; a person still answers', async () => {
    const sessionId = uniq('ask-reserved');
    await w.worker(scripted([{ toolCalls: [ask('q1', { question: 'Proceed?' })] }, { text: 'Proceeding.' }]));
    const parked = await startTurn(w.c, sessionId, 'do it');
    assert.equal(parked.state, 'awaiting_answer');
    const handle = w.c.client.workflow.getHandle(parked.workflowId);
    await handle.signal(answerSignal, { toolCallId: 'q1', by: 'auto', answer: 'yes', decisionId: 'raw-answer' });
    await handle.signal(approveSignal, { toolCallId: 'q1', by: 'auto', decisionId: 'raw-approve' });
    const s = await eventually(async () => {
      const t = await turnStatus(w.c, parked.workflowId);
      return t.decisions.filter((d) => d.by === 'auto').length >= 2 && t;
    }, 'both raw signals are judged');
    assert.deepEqual(
      s.decisions.map((d) => [d.kind, d.decisionId, d.outcome, d.why?.replace(/^refused \w+: by /, '')]),
      [
        ['answer', 'raw-answer', 'ignored', reservedName('auto')],
        ['approve', 'raw-approve', 'ignored', reservedName('auto')],
      ],
      'one check, one reason',
    );
    assert.match(s.decisions[0]!.why!, /^refused answer: by 'auto' is reserved for decisions no person made/);
    assert.equal(s.ledger[0]!.state, 'awaiting_answer');
    assert.equal(s.ledger[0]!.answeredBy, undefined);
    const cli = await runCli(['answer', sessionId, 'q1', 'yes', '--by', 'auto', '--task-queue', w.taskQueue]);
    assert.notEqual(cli.code, 0, cli.stdout);
    assert.match(cli.stderr, /'auto' is reserved/);
    const res = await runCli(['answer', sessionId, 'q1', 'yes', '--by', 'ann', '--task-queue', w.taskQueue]);
    assert.equal(res.code, 0, res.stderr + res.stdout);
    const done = await turnClosed(w.c, parked);
    assert.equal(done.ledger[0]!.result, 'yes');
    assert.equal(done.ledger[0]!.answeredBy, 'ann');
  });

  it('a deadline passes: the model is told no answer came, and the turn goes on', async () => {
    const sessionId = uniq('ask-deadline');
    await w.worker(
      scripted([{ toolCalls: [ask('q1', { question: 'Proceed?', timeoutSeconds: 2 })] }, { text: 'Went on without.' }]),
    );
    const parked = await startTurn(w.c, sessionId, 'do it');
    assert.equal(parked.state, 'awaiting_answer');
    const done = await turnClosed(w.c, parked);
    assert.equal(done.state, 'completed');
    const e = done.ledger[0]!;
    assert.equal(e.state, 'failed');
    assert.match(e.error ?? '', /^no answer came within 2 seconds/);
    const { transcript } = await eventually(async () => {
      const s = await sessionStatus(w.c, sessionId);
      return s.transcript.some((m) => m.role === 'tool') && s;
    }, 'the session keeps the turn');
    const result = transcript.find((m) => m.role === 'tool');
    assert.equal(result?.role === 'tool' && result.isError, true);
    assert.match(result?.role === 'tool' ? result.content : '', /^Error: no answer came within 2 seconds/);
    await recordHistory(parked.workflowId, 'turn-ask-user-deadline');
  });

  it('a cancel while the question waits ends it: the call fails saying so, and a late answer is refused', async () => {
    const sessionId = uniq('ask-cancel');
    await w.worker(scripted([{ toolCalls: [ask('q1', { question: 'Proceed?' })] }, { text: 'unused' }]));
    const parked = await startTurn(w.c, sessionId, 'do it');
    assert.equal(parked.state, 'awaiting_answer');
    await cancelTurn(w.c, { sessionId });
    const done = await turnClosed(w.c, parked);
    assert.equal(done.state, 'cancelled');
    assert.equal(done.ledger[0]!.state, 'failed');
    assert.equal(done.ledger[0]!.error, 'no answer: the turn was cancelled while the question waited');
    const late = await answer(w.c, { sessionId, turn: 1, toolCallId: 'q1', answer: 'yes', by: 'ann' }).catch(
      (err: Error) => err.message,
    );
    assert.match(String(late), /^no longer asking: no answer: the turn was cancelled/);
  });

  it('chat prints the question with its choices and takes the next line as the answer; a line not among them is asked again', async function () {
    try {
      execFileSync('tmux', ['-V'], { stdio: 'ignore' });
    } catch {
      if (process.env.CI) throw new Error('CI must have tmux: .ci/run installs it');
      this.skip();
    }
    await w.worker(
      scripted([
        { toolCalls: [ask('q1', { question: 'Which day?', choices: ['Monday', 'Friday'] })] },
        { text: 'Monday then.' },
      ]),
    );
    const sessionId = uniq('ask-chat');
    let term: Terminal | undefined;
    try {
      term = startTerminal('ask', [process.execPath, CLI, 'chat', sessionId, '--task-queue', w.taskQueue]);
      await term.waitFor(/you>$/);
      term.type('plan the launch');
      await term.waitFor(/\? the agent asks \[q1\]: Which day\?\n\s+1\. Monday\n\s+2\. Friday\n[\s\S]*answer>$/);
      term.type('Sunday');
      await term.waitFor(/'Sunday' is not one of the choices[\s\S]*answer>$/);
      term.type('monday');
      await term.waitFor(/answered by [^:]+: Monday[\s\S]*assistant: Monday then\./);
    } finally {
      term?.close();
    }
  });
});
