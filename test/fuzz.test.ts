import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { cancelTurn } from '../client/cancel';
import { approve } from '../client/decisions';
import { createApproverKey } from '../client/keys';
import { sessionStatus, turnStatus } from '../client/session';
import { decisionsReceived } from '../workflows/audit';
import { parseDecision, splitDecisions } from '../workflows/decisions';
import { sessionWorkflowId } from '../workflows/definitions';
import { messageProblem } from '../workflows/limits';
import type { FakeReply } from './support/fakeModelServer';
import { startFakeModelServer } from './support/fakeModelServer';
import { hostileDecision, hostileToolCall, hostileValue } from './support/hostile';
import { eventually, scripted, startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// The end-to-end fuzz tier: hostile signals from a raw Temporal client, and hostile model output
// through the real AI SDK, against a real worker and dev server. Nothing may fail a workflow task,
// run a tool without a valid approval, or grow without bound; every refused decision is recorded.
// Seeded (FUZZ_SEED); the drawn values are printed on failure.

const SEED = Number(process.env.FUZZ_SEED ?? 7443);
const SIGNALS = Number(process.env.FUZZ_SIGNALS ?? 150);
const RESPONSES = Number(process.env.FUZZ_RESPONSES ?? 10);

type Sent = { name: string; payload: unknown };

/** Workflow task failures in a history: a payload that breaks a handler shows up here, retried forever. */
async function taskFailures(w: ReturnType<typeof useWorld>, workflowId: string): Promise<string[]> {
  const { events } = await w.c.client.workflow.getHandle(workflowId).fetchHistory();
  return (events ?? [])
    .filter((e) => e.workflowTaskFailedEventAttributes)
    .map((e) => e.workflowTaskFailedEventAttributes?.failure?.message ?? '?');
}

describe(`fuzz tier, end to end (fast-check, seed ${SEED})`, function () {
  this.timeout(180_000);
  const w = useWorld();
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(tmpdir(), 'openworker-fuzz-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it(`${SIGNALS} hostile signals at a parked turn and its session: no task failure, no execution, every decision recorded`, async () => {
    const alice = createApproverKey('alice', path.join(dir, 'keys'));
    const approvers = path.join(dir, 'approvers.json');
    writeFileSync(
      approvers,
      JSON.stringify({ approvers: { alice: alice.publicKey }, policy: [{ tool: '*', approvers: ['alice'] }] }),
    );
    const email = { id: 'c1', name: 'send_email', arguments: { to: 'ann@example.com', subject: 'Hi', body: 'Hello.' } };
    await w.worker(scripted([{ toolCalls: [email] }, { text: 'sent' }]), { env: { OPENWORKER_APPROVERS: approvers } });
    const sessionId = uniq('fuzz-signals');
    const t = await startTurn(w.c, sessionId, 'email ann');
    assert.equal(t.state, 'awaiting_approval');

    // A valid unsigned reject of c1, or a valid message, would legitimately end the wait or start a
    // turn; everything else must change nothing.
    const rejectsC1 = (raw: unknown) => {
      const r = parseDecision('reject', raw);
      return r.ok && r.decision.payload.toolCallId === 'c1';
    };
    const signalArb: fc.Arbitrary<Sent> = fc.oneof(
      fc.record({
        name: fc.constantFrom('approve', 'recover'),
        payload: fc.oneof(hostileDecision('approve'), hostileDecision('recover')),
      }),
      fc.record({ name: fc.constant('reject'), payload: hostileDecision('reject').filter((p) => !rejectsC1(p)) }),
      fc.record({
        name: fc.constant('decisions'),
        payload: fc
          .oneof(hostileValue(), fc.record({ decisions: fc.array(hostileDecision('approve'), { maxLength: 8 }) }))
          .filter((p) => {
            const b = splitDecisions(p);
            return !b.ok || !b.items.some((i) => i.kind === 'reject' && rejectsC1(i.payload));
          }),
      }),
      fc.record({ name: fc.constantFrom('grants', 'grant', 'revoke'), payload: hostileValue() }),
      fc.record({
        name: fc.constant('message'),
        payload: fc
          .oneof(hostileValue(), fc.record({ text: hostileValue(48) }))
          .filter((p) => messageProblem((p as { text?: unknown })?.text) !== undefined),
      }),
    );
    const sent = fc.sample(signalArb, { seed: SEED, numRuns: SIGNALS });
    // And a few that are simply large: a 40 KiB id and a 300 KiB reason (stored outside history).
    sent.push(
      { name: 'approve', payload: { toolCallId: 'x'.repeat(40_000), by: 'mallory' } },
      { name: 'recover', payload: { toolCallId: 'c1', by: 'mallory', decision: 'retry', reason: 'r'.repeat(300_000) } },
    );

    const turn = w.c.client.workflow.getHandle(t.workflowId);
    const session = w.c.client.workflow.getHandle(sessionWorkflowId(sessionId));
    let expected = 0;
    for (const s of sent) {
      const onSession = ['grant', 'revoke', 'message'].includes(s.name);
      await (onSession ? session : turn).signal(s.name, s.payload as never);
      if (s.name === 'decisions') {
        const b = splitDecisions(s.payload);
        expected += b.ok ? b.items.length : 1;
      } else if (['approve', 'reject', 'recover'].includes(s.name)) expected += 1;
    }
    // A turn has no update handler (the `dispatch` update went with baseline 1): any update is refused
    // without a trace in history.
    for (const junk of fc.sample(hostileValue(), { seed: SEED, numRuns: 5 })) {
      await assert.rejects(turn.executeUpdate('dispatch', { args: [junk as never] }), (err: Error) =>
        /no registered handler for update/i.test((err.cause as Error)?.message ?? ''),
      );
    }

    const status = await eventually(async () => {
      const s = await turnStatus(w.c, t.workflowId);
      return decisionsReceived(s.decisions) >= expected ? s : undefined;
    }, `the turn records all ${expected} decisions`);
    const context = () =>
      `seed ${SEED}; sent:\n${sent.map((s) => `${s.name} ${JSON.stringify(s.payload)?.slice(0, 300)}`).join('\n')}`;
    // The audit keeps the latest MAX_NOT_APPLIED_KEPT refusals and counts the rest (workflows/audit.ts).
    assert.equal(decisionsReceived(status.decisions), expected, context());
    assert.ok(
      status.decisions.every((d) => d.outcome === 'ignored' && d.why && d.why.length < 3000),
      context(),
    );
    assert.deepEqual(await taskFailures(w, t.workflowId), [], context());
    assert.deepEqual(await taskFailures(w, sessionWorkflowId(sessionId)), []);
    const c1 = status.ledger.find((e) => e.toolCallId === 'c1')!;
    assert.equal(c1.state, 'awaiting_approval', context());
    assert.equal(w.sink.deliveries(`<${c1.executionId}@openworker-temporal>`), 0, 'nothing was sent');
    const s = await sessionStatus(w.c, sessionId);
    assert.deepEqual(s.pending, [], 'no hostile message was queued');
    assert.ok(
      (s.refused ?? []).length > 0 && (s.refused ?? []).length <= 20,
      'refused messages are recorded, the latest 20',
    );
    const { events } = await turn.fetchHistory();
    assert.ok(
      (events ?? []).length < sent.length * 3 + 60,
      `history stays proportional to the signals: ${(events ?? []).length} events`,
    );

    // The session still works: the one valid, signed approval runs the call once.
    const ok = await approve(w.c, { sessionId, toolCallId: 'c1', key: alice });
    assert.equal(ok.outcome, 'applied', ok.why);
    const done = await turnClosed(w.c, t);
    assert.equal(done.state, 'completed', done.error);
    assert.equal(w.sink.deliveries(`<${c1.executionId}@openworker-temporal>`), 1);
    console.log(
      `      fuzz: ${sent.length} signals, ${expected} decisions refused and recorded, ${(events ?? []).length} history events`,
    );
  });

  it(`${RESPONSES} hostile model responses through the AI SDK (and one with 3000 calls): bounded ledgers, nothing runs unapproved`, async () => {
    const fake = await startFakeModelServer();
    try {
      await w.worker(`openai-compatible:fake-model@${fake.url}`);
      const names = ['send_email', 'lookup_contact', 'charge_card'];
      // Most calls follow the wire protocol (string ids and names, a string of arguments) with hostile
      // contents; one in eight breaks it, and the provider adapter must refuse the response in one line.
      const asText = (v: unknown): string => (typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v)));
      const wire = (c: unknown) => {
        const call = (c && typeof c === 'object' ? c : {}) as { id?: unknown; name?: unknown; arguments?: unknown };
        return {
          ...(call.id !== undefined ? { id: asText(call.id) } : {}),
          name: asText(call.name ?? ''),
          argumentsText: typeof call.arguments === 'string' ? call.arguments : asText(call.arguments ?? {}),
        };
      };
      const replies: FakeReply[] = fc
        .sample(
          fc.record({
            text: fc.oneof(fc.string(), fc.constant('t'.repeat(70_000))),
            toolCalls: fc.array(hostileToolCall(names), { minLength: 1, maxLength: 12 }),
            breaksProtocol: fc.integer({ min: 1, max: 8 }).map((n) => n === 1),
          }),
          { seed: SEED, numRuns: RESPONSES },
        )
        .map((r) => ({
          text: r.text,
          toolCalls: r.toolCalls.map((c) =>
            r.breaksProtocol ? ((c && typeof c === 'object' ? c : { name: c, arguments: c }) as never) : wire(c),
          ),
        }));
      replies.push({
        text: '',
        toolCalls: Array.from({ length: 3000 }, (_, i) => ({
          id: `c${i}`,
          name: i % 2 ? 'send_email' : 'toString',
          arguments: { to: `u${i}@example.com`, subject: 's', body: 'b' },
        })),
      });
      const outcomes: string[] = [];
      for (const [i, reply] of replies.entries()) {
        fake.enqueue(reply); // the next model call gets the server's default "ok"
        const sessionId = uniq(`fuzz-model-${i}`);
        const t = await startTurn(w.c, sessionId, 'do it');
        const why = `response ${i}: ${JSON.stringify(reply).slice(0, 600)}`;
        assert.ok(['awaiting_approval', 'completed', 'failed'].includes(t.state), `${why}\nstate ${t.state}`);
        if (t.state === 'failed')
          assert.match(
            t.error ?? '',
            /^model call failed: .* answered with a response that does not follow its API .{0,400}$/,
            `only a response that breaks the protocol fails the turn, in one line: ${why}`,
          );
        assert.ok(t.ledger.length <= 65, `${why}\nledger of ${t.ledger.length}`);
        for (const e of t.ledger) {
          assert.ok(
            ['invalid', 'awaiting_approval', 'succeeded', 'failed'].includes(e.state),
            `${why}\n${e.toolCallId} is ${e.state}`,
          );
          if (e.state === 'succeeded')
            assert.equal(e.tool, 'lookup_contact', 'only the read-only tool runs without approval');
          if (e.state === 'invalid')
            assert.ok(
              e.error && e.error.length < 2500,
              `${why}\nan invalid call says why, briefly: ${e.error?.slice(0, 200)}`,
            );
          assert.equal(w.sink.deliveries(`<${e.executionId}@openworker-temporal>`), 0);
        }
        assert.deepEqual(await taskFailures(w, t.workflowId), [], why);
        if (!t.closed) {
          const c = await cancelTurn(w.c, { sessionId, waitMs: 30_000 });
          assert.equal(c.state, 'cancelled');
        }
        outcomes.push(`${t.state}/${t.ledger.length}${t.state === 'failed' ? ` (${t.error})` : ''}`);
      }
      assert.equal(fake.requests.length >= replies.length, true);
      console.log(`      fuzz: ${replies.length} model responses → ${outcomes.join('\n')}`);
    } finally {
      await fake.close();
    }
  });
});
