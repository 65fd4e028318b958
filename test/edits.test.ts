import { strict as assert } from 'node:assert';
import { messageIdFor } from '../activities/tools/sendEmail';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { approvalsApp } from '../apps/approvals/app';
import { createToken } from '../apps/approvals/tokens';
import { normalizeMessageId } from '../dev/mailSink';
import { listApproverKeys, signDecision } from '../client/keys';
import { sessionStatus, turnStatus } from '../client/session';
import { approveSignal } from '../workflows/definitions';
import { argsDigest } from '../workflows/identity';
import { recordHistory } from './support/histories';
import { runCli } from './support/processes';
import { emailCall, eventually, scripted, startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Approve with edits, end to end: a real dev server, a real worker process, real SMTP.

describe('approve with edits end to end', function () {
  this.timeout(90_000);
  const w = useWorld();

  it('an edit failing the schema changes nothing; an edit by the CLI runs once with the edited arguments, audited, and the model is told', async () => {
    const sessionId = uniq('edits');
    const asked = { subject: 'Launch', body: 'We launch on Monday.' };
    await w.worker(
      scripted([{ text: 'Sending.', toolCalls: [emailCall('c1', 'bob@example.com', asked)] }, { text: 'Sent.' }]),
    );
    const parked = await startTurn(w.c, sessionId, 'tell bob we launch monday');
    const before = parked.ledger[0]!;
    assert.equal(before.state, 'awaiting_approval');
    const messageId = messageIdFor(before.executionId);

    // Through the approvals API (what the page's edit box sends): refused by the tool's schema (not
    // an address), so no effect, and the call still awaits approval.
    const dir = mkdtempSync(join(tmpdir(), 'openworker-edits-'));
    const tokensFile = join(dir, 'tokens.json');
    const token = createToken('alice', tokensFile);
    const app = approvalsApp({ client: w.c, tokensFile });
    const post = async (body: Record<string, unknown>) => {
      const res = await app.request('/api/decisions', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        // The link's reference, as the page sends it: finding the call by ID alone would ask every
        // parked turn on this shared server (#31).
        body: JSON.stringify({
          executionId: before.executionId,
          argsDigest: before.argsDigest,
          ref: { sessionId, turn: 1, toolCallId: 'c1' },
          ...body,
        }),
      });
      return { status: res.status, body: (await res.json()) as { outcome?: string; why?: string; error?: string } };
    };
    const grantEdit = await post({ action: 'approve_session', arguments: { to: 'eve@example.com', ...asked } });
    assert.equal(grantEdit.status, 400);
    assert.match(grantEdit.body.error ?? '', /^arguments go only with approve/);
    const bad = await post({ action: 'approve', arguments: { to: 'not an address', ...asked } });
    rmSync(dir, { recursive: true, force: true });
    assert.equal(bad.status, 409, JSON.stringify(bad.body));
    assert.equal(bad.body.outcome, 'ignored');
    assert.match(bad.body.why ?? '', /^edited arguments refused: invalid arguments for 'send_email'/);
    const still = (await turnStatus(w.c, parked.workflowId)).ledger[0]!;
    assert.equal(still.state, 'awaiting_approval');
    assert.deepEqual(still.arguments, before.arguments);
    assert.equal(still.argsDigest, before.argsDigest);
    assert.equal(still.runs, 0);
    assert.equal(still.events.at(-1)!.type, 'decision_refused');
    assert.equal(w.sink.deliveries(messageId), 0);

    // Bad input on the command line: one line, exit 2, nothing sent.
    const notJson = await runCli(['approve', sessionId, 'c1', '--args', '{to:', '--task-queue', w.taskQueue]);
    assert.equal(notJson.code, 2, notJson.stderr);
    assert.match(notJson.stderr, /--args is not valid JSON/);

    const res = await runCli([
      'approve',
      sessionId,
      'c1',
      '--set',
      'subject=Launch moved',
      '--by',
      'alice',
      '--task-queue',
      w.taskQueue,
    ]);
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stdout, /approve c1: applied/);
    const done = await turnClosed(w.c, parked);
    assert.equal(done.state, 'completed');
    const e = done.ledger[0]!;
    const edited = { to: 'bob@example.com', subject: 'Launch moved', body: asked.body };
    assert.equal(e.state, 'succeeded');
    assert.equal(e.executionId, before.executionId, 'the execution ID stays');
    assert.deepEqual(e.arguments, edited);
    assert.equal(e.argsDigest, argsDigest(edited));
    assert.deepEqual(e.originalArguments, before.arguments);
    assert.equal(e.originalDigest, before.argsDigest);
    assert.equal(e.approvedBy, 'alice');
    const ev = e.events.find((x) => x.type === 'edited');
    assert.deepEqual(ev && { by: ev.by, from: ev.from, to: ev.to }, {
      by: 'alice',
      from: before.argsDigest,
      to: argsDigest(edited),
    });
    // The tool received exactly the edited arguments, once.
    assert.equal(w.sink.deliveries(messageId), 1);
    const sent = w.sink.messages().filter((m) => normalizeMessageId(m.messageId) === normalizeMessageId(messageId));
    assert.deepEqual(
      sent.map((m) => [m.to, m.subject]),
      [[['bob@example.com'], 'Launch moved']],
    );
    // The model asked for "Launch" and is told what ran; the pairing stays.
    const { transcript } = await eventually(async () => {
      const s = await sessionStatus(w.c, sessionId);
      return s.transcript.some((m) => m.role === 'tool') && s;
    }, 'the session keeps the turn');
    const call = transcript.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []) : []));
    assert.deepEqual(
      call.map((c) => (c.arguments as { subject: string }).subject),
      ['Launch'],
    );
    const results = transcript.filter((m) => m.role === 'tool');
    assert.equal(results.length, 1);
    assert.match(
      results[0]!.role === 'tool' ? results[0]!.content : '',
      /^\[alice edited the arguments of this call before approving it; it ran with \{.*"subject":"Launch moved".*\}\]\n/,
    );
    const decisions = done.decisions.map((d) => [d.by, d.outcome]);
    assert.deepEqual(decisions, [
      ['alice', 'ignored'],
      ['alice', 'applied'],
    ]);
    await recordHistory(parked.workflowId, 'turn-approve-with-edits');
  });

  it('signed: the signature covers the edited arguments; one over the arguments the model asked is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'openworker-edits-signed-'));
    try {
      const env = { OPENWORKER_KEYS_DIR: join(dir, 'keys') };
      const made = await runCli(['keys', 'create', 'alice'], { env });
      assert.equal(made.code, 0, made.stderr);
      const publicKey = /"alice": "([A-Za-z0-9+/=]{44})"/.exec(made.stdout)![1]!;
      const approvers = join(dir, 'approvers.json');
      writeFileSync(
        approvers,
        JSON.stringify({ approvers: { alice: publicKey }, policy: [{ tool: '*', approvers: ['alice'] }] }),
      );
      await w.worker(scripted([{ toolCalls: [emailCall('c1', 'ann@example.com')] }, { text: 'Sent.' }]), {
        env: { OPENWORKER_APPROVERS: approvers },
      });
      const sessionId = uniq('edits-signed');
      const t = await startTurn(w.c, sessionId, 'email ann');
      const e = t.ledger[0]!;
      assert.equal(e.state, 'awaiting_approval');
      const edited = { to: 'ann@example.com', subject: 'Hi Ann', body: 'Hello.' };
      // Signed over the arguments the model asked, sent with edited ones: refused, nothing runs.
      const [key] = listApproverKeys(env.OPENWORKER_KEYS_DIR);
      const oldSig = signDecision(key!, { executionId: e.executionId, argsDigest: e.argsDigest, decision: 'approve' });
      await w.c.client.workflow.getHandle(t.workflowId).signal(approveSignal, {
        toolCallId: 'c1',
        by: 'alice',
        decisionId: 'old',
        arguments: edited,
        signature: oldSig,
      });
      const old = await eventually(
        async () => (await turnStatus(w.c, t.workflowId)).decisions.find((d) => d.decisionId === 'old'),
        'the edit signed over the old arguments is judged',
      );
      assert.match(old.why ?? '', /^wrongly signed/);
      const res = await runCli(
        ['approve', sessionId, 'c1', '--args', JSON.stringify(edited), '--task-queue', w.taskQueue],
        {
          env,
        },
      );
      assert.equal(res.code, 0, res.stderr + res.stdout);
      const done = await turnClosed(w.c, t);
      const after = done.ledger[0]!;
      assert.equal(after.state, 'succeeded');
      assert.deepEqual(after.arguments, edited);
      assert.equal(after.signedApproval?.keyId, key!.keyId);
      assert.equal(after.events.find((x) => x.type === 'edited')?.to, argsDigest(edited));
      assert.deepEqual(
        w.sink
          .messages()
          .filter((m) => normalizeMessageId(m.messageId) === normalizeMessageId(messageIdFor(e.executionId)))
          .map((m) => m.subject),
        ['Hi Ann'],
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
