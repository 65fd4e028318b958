import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApproverKey } from '../client/keys';
import { approve } from '../client/decisions';
import { approveAlways, listGrants } from '../client/grants';
import { sessionStatus } from '../client/session';
import type { WaitedTurn } from '../client/session';
import { grantSignal, revokeSignal, sessionWorkflowId } from '../workflows/definitions';
import { taskFailuresIn } from './support/eventCounts';
import { recordHistory } from './support/histories';
import { runCli } from './support/processes';
import { emailCall, scripted, startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Standing approvals end to end: granted from an approval, applied to new calls only (in the same
// turn and later ones), kept across a worker restart and a continue-as-new, never stretched to
// another target, audited per call, listed and revoked through the CLI.

describe('standing approvals (grants)', function () {
  this.timeout(120_000);
  const w = useWorld();
  const email = emailCall;
  const closed = (t: { workflowId: string }) => turnClosed(w.c, t);
  const entry = (t: WaitedTurn, id: string) => t.ledger.find((e) => e.toolCallId === id)!;
  const sent = (t: WaitedTurn, id: string) => w.sink.deliveries(`<${entry(t, id).executionId}@openworker-temporal>`);

  it('"always for this session": later calls of the tool need no approval, across a restart, until revoked', async () => {
    const script = scripted([
      { toolCalls: [email('c1', 'ann@example.com')] },
      { toolCalls: [email('c2', 'ben@example.com')] },
      { text: 'two sent' },
      { toolCalls: [email('c3', 'cy@example.com')] },
      { text: 'three sent' },
      { toolCalls: [email('c4', 'dee@example.com')] },
      { text: 'four sent' },
    ]);
    const w1 = await w.worker(script);
    const sessionId = uniq('grant-tool');
    const first = await startTurn(w.c, sessionId, 'email ann, then ben');
    assert.equal(first.state, 'awaiting_approval');
    const cli = await runCli([
      'approve',
      sessionId,
      'c1',
      '--always',
      'session',
      '--by',
      'alice',
      '--task-queue',
      w.taskQueue,
    ]);
    assert.equal(cli.code, 0, cli.stderr);
    const grantId = /granted (g-[0-9a-f]+): send_email \(any target\) in session/.exec(cli.stdout)?.[1];
    assert.ok(grantId, cli.stdout);
    const t1 = await closed(first);
    assert.equal(t1.state, 'completed', t1.error);
    assert.equal(entry(t1, 'c1').approvedBy, 'alice');
    assert.equal(entry(t1, 'c1').grantId, undefined, 'the call that was asked about was approved by alice herself');
    assert.equal(entry(t1, 'c2').grantId, grantId, 'the next call of the same turn went through on the grant');
    assert.equal(entry(t1, 'c2').events.find((e) => e.type === 'approved')?.grant, grantId);
    assert.equal(sent(t1, 'c2'), 1);
    await recordHistory(t1.workflowId, 'turn-grant-same-turn');

    await w1.kill('SIGKILL');
    await w.worker(script);
    const t2 = await closed(await startTurn(w.c, sessionId, 'email cy'));
    assert.equal(t2.state, 'completed', 'no one was asked: the grant survived the worker');
    assert.equal(entry(t2, 'c3').grantId, grantId);

    const listed = await runCli(['grants', sessionId, '--task-queue', w.taskQueue]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(
      listed.stdout,
      new RegExp(
        `${grantId}  send_email \\(any target\\)  by alice at .*  active\\n    approved: turn 1 c2 → ben@example.com, turn 2 c3 → cy@example.com`,
      ),
    );

    const revoked = await runCli(['revoke', sessionId, grantId, '--by', 'bob', '--task-queue', w.taskQueue]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stdout, new RegExp(`revoked ${grantId}`));
    const t3 = await startTurn(w.c, sessionId, 'email dee');
    assert.equal(t3.state, 'awaiting_approval', 'a revoked grant approves nothing');
    const after = (await listGrants(w.c, sessionId))[0]!;
    assert.equal(after.revokedBy, 'bob');
    await approve(w.c, { sessionId, toolCallId: 'c4', by: 'carol' });
    assert.equal((await closed(t3)).state, 'completed');

    await recordHistory(sessionWorkflowId(sessionId), 'session-grants');
    const unknown = await runCli(['revoke', sessionId, 'g-nope', '--task-queue', w.taskQueue]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^error: no grant 'g-nope' in session '.*'; it has no active grants$/m);

    // A raw grant or revoke under a name the system reserves reaches the session and changes nothing,
    // without failing its task (issue #27 hole 4; the library refuses it before sending).
    const session = w.c.client.workflow.getHandle(sessionWorkflowId(sessionId));
    await session.signal(grantSignal, { grantId: 'g-auto', tool: 'send_email', by: 'auto' });
    await session.signal(grantSignal, { grantId: 'g-ann', tool: 'send_email', by: 'ann' });
    await session.signal(revokeSignal, { grantId: 'g-ann', by: 'System' });
    const s = await sessionStatus(w.c, sessionId);
    assert.deepEqual(
      (s.grants ?? []).map((g) => [g.id, g.by, g.revokedBy]),
      [
        [grantId, 'alice', 'bob'],
        ['g-ann', 'ann', undefined],
      ],
    );
    assert.deepEqual(taskFailuresIn((await session.fetchHistory()).events ?? []), []);

    // #28: a grant of a tool no worker serves is refused in one line that lists the tools; one the
    // worker serves goes through; --unlisted grants a tool a worker lists only later (an MCP server's).
    const q = ['--by', 'ann', '--task-queue', w.taskQueue];
    const typo = await runCli(['grant', sessionId, 'send_emial', ...q]);
    assert.equal(typo.code, 2, typo.stderr);
    assert.match(
      typo.stderr,
      /^error: tool 'send_emial' is not one the worker serves \(it serves [^)]*\bsend_email\b[^)]*\); a grant names a tool exactly as the worker lists it; to grant it before a worker lists it, add --unlisted\n$/,
    );
    const known = await runCli(['grant', sessionId, 'send_email', '--target', 'eve@example.com', ...q]);
    assert.equal(known.code, 0, known.stderr);
    const later = await runCli(['grant', sessionId, 'files__write_file', '--unlisted', ...q]);
    assert.equal(later.code, 0, later.stderr);
    assert.deepEqual(
      ((await sessionStatus(w.c, sessionId)).grants ?? []).slice(-2).map((g) => [g.tool, g.target]),
      [
        ['send_email', 'eve@example.com'],
        ['files__write_file', undefined],
      ],
    );
  });

  it('"always for this target": the same target goes through, another target asks; kept across continue-as-new', async () => {
    await w.worker(
      scripted([
        { toolCalls: [email('c1', 'ann@example.com')] },
        { text: 'ann done' },
        { toolCalls: [email('c2', 'ann@example.com'), email('c3', 'ann.other@example.com')] },
        { text: 'both done' },
      ]),
    );
    const sessionId = uniq('grant-target');
    // One turn per run: the grant must travel through continue-as-new.
    const started = await w.c.client.workflow.start('session', {
      workflowId: sessionWorkflowId(sessionId),
      taskQueue: w.taskQueue,
      args: [{ sessionId, turnsPerRun: 1 }],
    });
    const first = await startTurn(w.c, sessionId, 'email ann');
    const d = await approveAlways(w.c, { sessionId, toolCallId: 'c1', by: 'alice', always: 'target' });
    assert.equal(d.outcome, 'applied');
    assert.equal(d.grant?.grant.target, 'ann@example.com');
    await closed(first);
    const second = await startTurn(w.c, sessionId, 'email ann and her namesake');
    const described = await w.c.client.workflow.getHandle(sessionWorkflowId(sessionId)).describe();
    assert.notEqual(described.runId, started.firstExecutionRunId, 'the session continued as new');
    assert.equal(second.state, 'awaiting_approval');
    assert.equal(entry(second, 'c2').state !== 'awaiting_approval', true, 'the granted target needs no approval');
    assert.equal(entry(second, 'c2').grantId, d.grant?.grant.id);
    assert.equal(entry(second, 'c3').state, 'awaiting_approval', 'a grant never covers another target');
    const s = await sessionStatus(w.c, sessionId);
    assert.equal(s.grants?.length, 1);

    const noTarget = await runCli(['approve', sessionId, 'c3', '--always', 'bogus', '--task-queue', w.taskQueue]);
    assert.notEqual(noTarget.code, 0);
    assert.match(noTarget.stderr, /--always.*session, target/);
    await approve(w.c, { sessionId, toolCallId: 'c3', by: 'alice' });
    const t2 = await closed(second);
    assert.equal(t2.state, 'completed');
    assert.equal(sent(t2, 'c2'), 1);
    assert.equal(sent(t2, 'c3'), 1);
  });

  it('"always" with a signing key: the grant is recorded under the key\'s name, as the approval is', async () => {
    await w.worker(scripted([{ toolCalls: [email('c1', 'kim@example.com')] }, { text: 'done' }]));
    const sessionId = uniq('grant-key');
    const turn = await startTurn(w.c, sessionId, 'email kim');
    const dir = mkdtempSync(join(tmpdir(), 'keys-'));
    try {
      const key = createApproverKey('dana', dir);
      const d = await approveAlways(w.c, { sessionId, toolCallId: 'c1', key, always: 'session' });
      assert.equal(d.outcome, 'applied');
      assert.equal(d.grant?.grant.by, 'dana');
      assert.equal((await closed(turn)).state, 'completed');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
