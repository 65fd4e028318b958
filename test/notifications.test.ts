import { strict as assert } from 'node:assert';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventName } from '../bench/events';
import { historyOf } from './support/multijob';
import { startApprovalsServer, type ApprovalsServer } from '../apps/approvals/serve';
import { createToken } from '../apps/approvals/tokens';
import { answer } from '../client/answers';
import { approve } from '../client/decisions';
import { turnStatus } from '../client/session';
import { notifyActivityId, notifyTaskQueue } from '../workflows/ids';
import { taskFailuresIn } from './support/eventCounts';
import { recordHistory } from './support/histories';
import { spawnCliProcess } from './support/processes';
import { eventually, scripted, startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Notifications pushed by the turn against a real server: a worker process with OPENWORKER_NOTIFY=on
// plans calls with `notify`, so each park schedules a notify activity on `<queue>-notify`; the
// approvals app's notifier (an activity worker, in this process or a CLI process) POSTs it to local
// webhook receivers. Covered: one delivery per park across replicas, a notifier SIGKILLed right
// after a delivery and restarted, a notifier that is down when the call parks, a question's park,
// and a turn that goes on when nothing was delivered.

interface Received {
  key: string;
  body: { text: string; openworker: Record<string, unknown> };
}

/** A webhook receiver: every POST counted raw; the first `failFirst` answered 503 and not kept. */
async function receiver(failFirst = 0) {
  const got: Received[] = [];
  let attempts = 0;
  const server = http.createServer((req, res) => {
    let raw = '';
    req
      .on('data', (d) => (raw += d))
      .on('end', () => {
        attempts++;
        if (attempts <= failFirst) return void res.writeHead(503).end();
        got.push({ key: String(req.headers['idempotency-key']), body: JSON.parse(raw) as Received['body'] });
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    got,
    /** Deliveries after deduplication by Idempotency-Key, as a receiver that honours it keeps them. */
    keys: () => [...new Set(got.map((g) => g.key))],
    attempts: () => attempts,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('notifications pushed by the turn (a notify activity per park)', function () {
  this.timeout(120_000);
  const w = useWorld();
  let dir: string;
  let tokensFile: string;
  const apps: ApprovalsServer[] = [];
  const hooks: { close(): Promise<void> }[] = [];
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'openworker-notify-'));
    tokensFile = join(dir, 'tokens.json');
  });
  afterEach(async () => {
    for (const a of apps.splice(0)) await a.close();
    for (const h of hooks.splice(0)) await h.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const email = (id: string) => ({
    toolCalls: [
      { id, name: 'send_email', arguments: { to: 'ann@example.com', subject: 'Plan', body: 'the secret plan' } },
    ],
  });
  const notifying = (model: string) => w.worker(model, { env: { OPENWORKER_NOTIFY: 'on' } });
  const hook = async (failFirst = 0) => {
    const h = await receiver(failFirst);
    hooks.push(h);
    return h;
  };
  const app = async (urls: string[]) => {
    const a = await startApprovalsServer(w.c, {
      port: 0,
      tokensFile,
      notify: urls,
      publicUrl: 'https://approvals.example.com/',
    });
    apps.push(a);
    return a;
  };
  const history = (workflowId: string) => historyOf(w.c, workflowId);
  const notifiedEvents = async (workflowId: string) =>
    (await turnStatus(w.c, workflowId)).ledger[0]!.events.filter((e) => e.type === 'notified');

  it('two notifier replicas: one message per park, with its Idempotency-Key, a working link and no arguments; the ledger records `notified`; approval goes on', async () => {
    const h = await hook();
    await notifying(scripted([email('c1'), { text: 'done' }]));
    await app([h.url]);
    const b = await app([h.url]);
    const sessionId = uniq('notify');
    const parked = await startTurn(w.c, sessionId, 'send ann the plan');
    const executionId = parked.ledger[0]!.executionId;
    const notified = await eventually(async () => (await notifiedEvents(parked.workflowId))[0], 'notified recorded');
    assert.equal(notified.park, 'approval');
    assert.match(String(notified.by), /^approvals-/);
    assert.deepEqual([notified.delivered, notified.failed], [1, 0]);
    assert.equal(h.attempts(), 1, 'one POST for one park, whichever replica took it');
    const [m] = h.got;
    assert.equal(m!.key, `${executionId}:approval`);
    assert.match(
      m!.body.text,
      new RegExp(`^send_email → ann@example\\.com is waiting for approval in session ${sessionId}`),
    );
    assert.ok(!JSON.stringify(m!.body).includes('secret plan'), 'the arguments stay out of the message');
    assert.equal(m!.body.openworker.event, 'awaiting_approval');
    assert.equal(m!.body.openworker.argsDigest, parked.ledger[0]!.argsDigest);
    // The link is the call's page; its API answers for a signed-in operator.
    const link = new URL(String(m!.body.openworker.link));
    assert.equal(link.origin, 'https://approvals.example.com');
    const token = createToken('ops', tokensFile);
    const res = await fetch(`${b.url}/api/calls/${executionId}?${link.hash.split('?')[1]}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.equal(res.status, 200);
    await approve(w.c, { sessionId, toolCallId: 'c1', by: 'alice' });
    const done = await turnClosed(w.c, parked);
    assert.equal(done.state, 'completed');
    assert.equal(w.sink.deliveries(`<${executionId}@openworker-temporal>`), 1);
    // What the park cost in history: the activity, scheduled with the park's ID on the notify queue,
    // and the workflow task its completion takes.
    const events = await history(parked.workflowId);
    assert.deepEqual(taskFailuresIn(events), []);
    const scheduled = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'notifyPark');
    assert.equal(scheduled.length, 1);
    const attrs = scheduled[0]!.activityTaskScheduledEventAttributes!;
    assert.equal(attrs.activityId, notifyActivityId(executionId, 'approval'));
    assert.equal(attrs.taskQueue?.name, notifyTaskQueue(w.taskQueue));
    const completedAt = events.findIndex(
      (e) => e.activityTaskCompletedEventAttributes?.scheduledEventId?.toString() === scheduled[0]!.eventId?.toString(),
    );
    assert.deepEqual(events.slice(completedAt - 1, completedAt + 4).map(eventName), [
      'ACTIVITY_TASK_STARTED',
      'ACTIVITY_TASK_COMPLETED',
      'WORKFLOW_TASK_SCHEDULED',
      'WORKFLOW_TASK_STARTED',
      'WORKFLOW_TASK_COMPLETED',
    ]);
    // Baseline 1 asks no patch: no marker in the whole history.
    assert.equal(events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch').length, 0);
    await recordHistory(parked.workflowId, 'turn-notify-activity');
  });

  it('a notifier SIGKILLed right after a delivery: a restarted one finishes without re-sending it; one `notified`', async () => {
    const ok = await hook();
    const flaky = await hook(1);
    await notifying(scripted([email('c1'), { text: 'done' }]));
    const sessionId = uniq('notify-crash');
    const parked = await startTurn(w.c, sessionId, 'send ann the plan');
    const key = `${parked.ledger[0]!.executionId}:approval`;
    const serve = (faults?: string) =>
      spawnCliProcess(
        [
          '--task-queue',
          w.taskQueue,
          'approvals',
          'serve',
          '--port',
          '0',
          '--notify',
          ok.url,
          '--notify',
          flaky.url,
          '--public-url',
          'https://approvals.example.com',
        ],
        /approvals: http/,
        'approvals serve ready line',
        { ...(faults ? { faults } : {}), env: { OPENWORKER_APPROVALS_TOKENS: tokensFile } },
      );
    const first = await serve('notify.after_post');
    // `ok` took the POST and the notifier heartbeated it, then stopped at the fault point; `flaky`
    // answered 503. The heartbeat is on the server before the kill.
    assert.equal(await first.faultReached('notify.after_post'), key);
    const handle = w.c.client.workflow.getHandle(parked.workflowId);
    await eventually(
      async () => (await handle.describe()).raw.pendingActivities?.[0]?.lastHeartbeatTime,
      'the delivery heartbeat on the server',
    );
    await eventually(async () => flaky.attempts() === 1, 'the other URL tried (503)');
    await first.kill('SIGKILL');
    assert.equal(ok.attempts(), 1);
    assert.equal((await notifiedEvents(parked.workflowId)).length, 0);
    // A restarted notifier gets the retry once the dead attempt's heartbeat times out (10 s).
    await serve();
    const [notified] = await eventually(
      async () => {
        const n = await notifiedEvents(parked.workflowId);
        return n.length ? n : undefined;
      },
      'notified after the restart',
      45_000,
    );
    assert.deepEqual([notified!.delivered, notified!.failed], [2, 0]);
    // Exactly one delivery per URL after deduplication, and no more raw POSTs than one failure.
    assert.deepEqual(ok.keys(), [key]);
    assert.deepEqual(flaky.keys(), [key]);
    assert.equal(ok.attempts(), 1, 'the URL delivered before the crash is skipped on the retry');
    assert.equal(flaky.attempts(), 2, 'the one that failed is retried');
    assert.equal((await notifiedEvents(parked.workflowId)).length, 1);
  });

  it('a notifier that is down when calls park delivers when it starts; a turn approved meanwhile needs none', async () => {
    const h = await hook();
    await notifying(scripted([email('c1'), { text: 'done' }]));
    // Turn A is approved and finishes while no notifier runs: nothing waits on its notification.
    const a = await startTurn(w.c, uniq('notify-a'), 'send ann the plan');
    await approve(w.c, { sessionId: a.sessionId, toolCallId: 'c1', by: 'alice' });
    assert.equal((await turnClosed(w.c, a)).state, 'completed');
    // Turn B parks and waits: its activity is scheduled, untaken.
    const b = await startTurn(w.c, uniq('notify-b'), 'send ann the plan');
    const pending = await eventually(
      async () => (await w.c.client.workflow.getHandle(b.workflowId).describe()).raw.pendingActivities?.[0],
      'the notify activity pending',
    );
    assert.equal(pending.activityType?.name, 'notifyPark');
    assert.equal(pending.attempt, 1, 'a notifier that is down uses no attempt');
    assert.equal(h.attempts(), 0);
    await app([h.url]);
    await eventually(async () => (await notifiedEvents(b.workflowId)).length === 1, 'B notified');
    // Only B's park: A's activity went with its turn.
    assert.deepEqual(h.keys(), [`${b.ledger[0]!.executionId}:approval`]);
    assert.equal(h.attempts(), 1);
    assert.equal((await notifiedEvents(a.workflowId)).length, 0);
  });

  it('a question (ask_user) is a park too: the message asks it; the answer goes on', async () => {
    const h = await hook();
    const question = { question: 'Which day should we launch?', choices: ['Monday', 'Friday'] };
    await notifying(
      scripted([{ toolCalls: [{ id: 'q1', name: 'ask_user', arguments: question }] }, { text: 'Friday it is.' }]),
    );
    await app([h.url]);
    const parked = await startTurn(w.c, uniq('notify-ask'), 'plan the launch');
    const [n] = await eventually(async () => {
      const got = await notifiedEvents(parked.workflowId);
      return got.length ? got : undefined;
    }, 'the question notified');
    assert.equal(n!.park, 'question');
    assert.deepEqual(h.keys(), [`${parked.ledger[0]!.executionId}:question`]);
    assert.match(h.got[0]!.body.text, /^The agent asks in session .*: Which day should we launch\? https:/);
    assert.equal(h.got[0]!.body.openworker.event, 'awaiting_answer');
    await answer(w.c, { sessionId: parked.sessionId, toolCallId: 'q1', answer: 'Friday', by: 'ann' });
    assert.equal((await turnClosed(w.c, parked)).state, 'completed');
  });

  it('a receiver that keeps failing: the turn goes on when approved, and nothing says the park was notified', async () => {
    const h = await hook(1_000);
    await notifying(scripted([email('c1'), { text: 'done' }]));
    await app([h.url]);
    const parked = await startTurn(w.c, uniq('notify-fail'), 'send ann the plan');
    await eventually(async () => h.attempts() >= 2, 'the POST retried with backoff');
    await approve(w.c, { sessionId: parked.sessionId, toolCallId: 'c1', by: 'alice' });
    const done = await turnClosed(w.c, parked);
    assert.equal(done.state, 'completed');
    assert.equal(done.ledger[0]!.events.filter((e) => e.type === 'notified').length, 0);
    assert.deepEqual(taskFailuresIn(await history(parked.workflowId)), []);
  });
});
