import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { approve, recover } from '../client/decisions';
import { listApproverKeys, signDecision } from '../client/keys';
import { turnStatus } from '../client/session';
import type { WaitedTurn } from '../client/session';
import { approveSignal } from '../workflows/definitions';
import type { LedgerEntry } from '../workflows/types';
import { recordHistory } from './support/histories';
import { runCli } from './support/processes';
import { emailCall, eventually, scripted, startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Signed approvals end to end: keys made by the CLI, a worker with an approvers file and a policy,
// and every way a decision can fail to authorise a call (unsigned, signed by someone the policy
// does not name, expired, forged, a standing approval) refused and written into the ledger; the
// call runs once, on the one valid signature.

describe('signed approvals', function () {
  this.timeout(120_000);
  const w = useWorld();
  const email = emailCall;
  const entry = (t: { ledger: LedgerEntry[] }, id: string) => t.ledger.find((e) => e.toolCallId === id)!;
  const sent = (e: LedgerEntry) => w.sink.deliveries(`<${e.executionId}@openworker-temporal>`);
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(tmpdir(), 'openworker-signed-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** A key made with `keys create` in its own keys directory (an approver's machine). */
  async function person(name: string): Promise<{ env: Record<string, string>; publicKey: string }> {
    const env = { OPENWORKER_KEYS_DIR: path.join(dir, `${name}-keys`) };
    const made = await runCli(['keys', 'create', name], { env });
    assert.equal(made.code, 0, made.stderr);
    const publicKey = new RegExp(`"${name}": "([A-Za-z0-9+/=]{44})"`).exec(made.stdout)?.[1];
    assert.ok(publicKey, made.stdout);
    const listed = await runCli(['keys', 'list'], { env });
    assert.match(
      listed.stdout,
      new RegExp(`^${name} +ed25519:[0-9a-f]{16}  ${publicKey.replace(/[+/]/g, '\\$&')}$`, 'm'),
    );
    return { env, publicKey };
  }

  function approversFile(config: unknown): string {
    const file = path.join(dir, 'approvers.json');
    writeFileSync(file, JSON.stringify(config));
    return file;
  }

  const decisionOutcome = (workflowId: string, decisionId: string) =>
    eventually(
      async () => (await turnStatus(w.c, workflowId)).decisions.find((d) => d.decisionId === decisionId),
      `decision ${decisionId} is judged`,
    );

  it('with a policy: only a fresh signature by a named approver approves; every other decision is refused and recorded', async () => {
    const alice = await person('alice');
    const bob = await person('bob');
    const file = approversFile({
      approvers: { alice: alice.publicKey, bob: bob.publicKey },
      policy: [{ tool: 'send_email', targets: ['*@example.com'], approvers: ['alice'] }],
    });
    const worker = await w.worker(
      scripted([
        { toolCalls: [email('c1', 'ann@example.com')] },
        { toolCalls: [email('c2', 'ann@example.com')] },
        { text: 'both sent' },
      ]),
      {
        env: { OPENWORKER_APPROVERS: file },
      },
    );
    assert.match(worker.output(), /approvers alice, bob \(policy of 1 rules: signed approvals only\)/);
    const sessionId = uniq('signed');
    const t: WaitedTurn = await startTurn(w.c, sessionId, 'email ann twice');
    assert.equal(t.state, 'awaiting_approval');
    const c1 = entry(t, 'c1');
    assert.deepEqual([c1.approval?.signed, c1.approval?.allowed], [true, ['alice']]);

    const unsigned = await approve(w.c, { sessionId, toolCallId: 'c1', by: 'alice' });
    assert.equal(unsigned.outcome, 'ignored');
    assert.match(unsigned.why!, /^unsigned: the approval policy accepts only approvals signed by alice/);

    const byBob = await runCli(['approve', sessionId, 'c1', '--task-queue', w.taskQueue], { env: bob.env });
    assert.equal(byBob.code, 3, byBob.stderr);
    assert.match(
      byBob.stdout,
      /unauthorised: bob may not decide send_email → ann@example\.com; the policy \(policy\[0\] send_email → \*@example\.com\) allows alice/,
    );

    // Raw signals, as anyone with namespace access could send them.
    const [aliceKey] = listApproverKeys(alice.env.OPENWORKER_KEYS_DIR);
    const handle = w.c.client.workflow.getHandle(t.workflowId);
    const fields = { executionId: c1.executionId, argsDigest: c1.argsDigest, decision: 'approve' };
    const stale = signDecision(aliceKey!, fields, new Date(Date.now() - 20 * 60_000));
    await handle.signal(approveSignal, { toolCallId: 'c1', by: 'alice', decisionId: 'expired', signature: stale });
    assert.match(
      (await decisionOutcome(t.workflowId, 'expired')).why!,
      /^expired: signed at .*, 1[0-9]{3} s before it arrived \(at most 900 s\)/,
    );
    const forReject = signDecision(aliceKey!, { ...fields, decision: 'reject' });
    await handle.signal(approveSignal, { toolCallId: 'c1', by: 'alice', decisionId: 'forged', signature: forReject });
    assert.match(
      (await decisionOutcome(t.workflowId, 'forged')).why!,
      /^wrongly signed: the signature by ed25519:[0-9a-f]{16} does not match/,
    );
    assert.equal(sent(c1), 0, 'nothing ran on a refused decision');

    const byAlice = await runCli(['approve', sessionId, 'c1', '--always', 'session', '--task-queue', w.taskQueue], {
      env: alice.env,
    });
    assert.equal(byAlice.code, 0, byAlice.stderr + byAlice.stdout);
    // The grant is an unsigned claim: the next call still needs alice's signature.
    const waiting = await eventually(async () => {
      const s = await turnStatus(w.c, t.workflowId);
      return entry(s, 'c2')?.events.some((e) => e.type === 'decision_refused') ? s : undefined;
    }, 'the second call refuses the grant');
    assert.equal(entry(waiting, 'c2').state, 'awaiting_approval');
    assert.match(
      String(entry(waiting, 'c2').events.find((e) => e.type === 'decision_refused')!.why),
      /^grant g-[0-9a-f]+ not used: the approval policy needs a signed approval for each call$/,
    );
    const second = await runCli(['approve', sessionId, 'c2', '--task-queue', w.taskQueue], { env: alice.env });
    assert.equal(second.code, 0, second.stderr + second.stdout);

    const done = await turnClosed(w.c, t);
    assert.equal(done.state, 'completed', done.error);
    for (const id of ['c1', 'c2']) {
      assert.equal(sent(entry(done, id)), 1, `${id} ran once`);
      assert.equal(entry(done, id).approvedBy, 'alice');
      assert.match(entry(done, id).signedApproval?.keyId ?? '', /^ed25519:[0-9a-f]{16}$/);
    }
    const refused = entry(done, 'c1')
      .events.filter((e) => e.type === 'decision_refused')
      .map((e) => String(e.why).split(':')[0]);
    assert.deepEqual(refused, ['unsigned', 'unauthorised', 'expired', 'wrongly signed']);
    const signedRecords = done.decisions.filter((d) => d.outcome === 'applied').map((d) => d.signedBy);
    assert.equal(signedRecords.length, 2);
    assert.ok(signedRecords.every((k) => k === entry(done, 'c1').signedApproval!.keyId));
    const shown = await runCli(['show', sessionId, '--task-queue', w.taskQueue]);
    assert.match(
      shown.stdout,
      /c1 +send_email +succeeded .* approved by alice \(signed, key ed25519:[0-9a-f]{16}\)\n {4}4 decisions refused; last: wrongly signed/,
    );
    await recordHistory(t.workflowId, 'turn-signed-approvals');
  });

  it('a parked call is recovered only by a signed decision, and the signature covers the result', async () => {
    const alice = await person('alice');
    const file = approversFile({
      approvers: { alice: alice.publicKey },
      policy: [{ tool: '*', approvers: ['alice'] }],
    });
    const script = scripted([{ toolCalls: [email('c1', 'cy@example.com')] }, { text: 'sent' }]);
    const env = { OPENWORKER_APPROVERS: file };
    const w1 = await w.worker(script, { faults: 'tool.after_execute@send_email', env });
    const sessionId = uniq('signed-recover');
    const t = await startTurn(w.c, sessionId, 'email cy');
    const go = await runCli(['approve', sessionId, 'c1', '--task-queue', w.taskQueue], { env: alice.env });
    assert.equal(go.code, 0, go.stderr + go.stdout);
    await w1.faultReached('tool.after_execute');
    await w1.kill('SIGKILL');
    await w.worker(script, { env });
    await eventually(
      async () => (await turnStatus(w.c, t.workflowId)).state === 'recovery_required',
      'the call parks',
      60_000,
    );

    const unsigned = await recover(w.c, { sessionId, toolCallId: 'c1', by: 'alice', decision: 'retry' });
    assert.match(unsigned.why ?? '', /^unsigned: the approval policy accepts only recovery decisions signed by alice/);
    const ok = await runCli(
      [
        'recover',
        sessionId,
        'c1',
        '--decision',
        'succeeded',
        '--result',
        '{"delivered":true}',
        '--reason',
        'in the sink',
        '--task-queue',
        w.taskQueue,
      ],
      { env: alice.env },
    );
    assert.equal(ok.code, 0, ok.stderr + ok.stdout);
    const done = await turnClosed(w.c, t);
    assert.equal(done.state, 'completed', done.error);
    const c1 = entry(done, 'c1');
    assert.equal(sent(c1), 1, 'marked succeeded, not sent again');
    assert.deepEqual([c1.recoveryDecision, c1.recoveredBy, c1.result], ['succeeded', 'alice', { delivered: true }]);
    assert.match(c1.signedRecovery?.keyId ?? '', /^ed25519:/);
    const shown = await runCli(['show', sessionId, '--task-queue', w.taskQueue]);
    assert.match(
      shown.stdout,
      /approved by alice \(signed, key ed25519:[0-9a-f]{16}\), recovery succeeded by alice \(signed, key ed25519:[0-9a-f]{16}\)/,
    );
  });
});
