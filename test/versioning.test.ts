import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker, bundleWorkflowCode } from '@temporalio/worker';
import { historyOf } from './support/multijob';
import { faultSinks } from '../activities/faults';
import { startApprovalsServer } from '../apps/approvals/serve';
import { sendMessage, turnStatus, waitForTurn } from '../client/session';
import type { DevServer } from '../dev/server';
import { startDevServer } from '../dev/server';
import { defaultDataConverter } from '../runtime/dataConverter';
import { workflowBundlerOptions } from '../worker/bundle';
import { sessionWorkflowId } from '../workflows/definitions';
import { recordHistory } from './support/histories';
import { ROOT, runCli } from './support/processes';
import { emailCall, eventually, scripted, startTurn, uniq } from './support/scenario';
import { useWorld } from './support/world';
import { quietLogger } from './support/quietLogger';
import { V2_TIMER_MS } from './support/versioning/turnV2';

// Deploying while turns wait (docs/deploy.md, "Deploying while turns wait"): real worker processes of two
// builds under Worker Deployment Versioning on a dev server, driven by the Temporal CLI's
// `worker deployment` commands as an operator would. v2's turn starts with a timer, so a v1 turn that
// v2 replayed would fail with a nondeterminism error: pinning must keep every v1 turn on v1.
//
// The file runs its own dev server, with dev/server.ts's settings and two more: the server refuses to
// delete a version whose pollers it saw within `matching.PollerHistoryTTL` (5 min by default), so a
// stopped worker's pollers are forgotten after 8 s here; and idle polls return every 3 s (1 min by
// default) so that a live worker stays in that list (the CLI asks it whether any worker runs).
const DYNAMIC_CONFIG = { 'matching.PollerHistoryTTL': '8s', 'matching.longPollExpirationInterval': '3s' };
let server: DevServer | undefined;

type Event = temporal.api.history.v1.IHistoryEvent;
/** What `temporal worker deployment describe -o json` prints (the part this test reads). */
interface Described {
  routingConfig: { currentVersionBuildID: string };
  versionSummaries: { BuildID: string; drainageStatus: string }[];
}
const summaries = (d: Described) => Object.fromEntries(d.versionSummaries.map((v) => [v.BuildID, v.drainageStatus]));
const PINNED = temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED;

/** Who ran a run: the build IDs that completed its workflow tasks, failed tasks, v2's timer, the workers of its activities. */
const whoRan = (events: Event[]) => ({
  builds: [
    ...new Set(
      events.flatMap((e) => {
        const a = e.workflowTaskCompletedEventAttributes;
        return a ? [a.deploymentVersion?.buildId ?? a.workerVersion?.buildId ?? '(none)'] : [];
      }),
    ),
  ],
  failedTasks: events.filter((e) => e.workflowTaskFailedEventAttributes).length,
  v2Timer: events.some(
    (e) =>
      e.timerStartedEventAttributes &&
      Number(e.timerStartedEventAttributes.startToFireTimeout?.nanos) === V2_TIMER_MS * 1e6,
  ),
  // Activities (model calls, send_email) follow their pinned turn to its version's workers too.
  activityPids: [
    ...new Set(
      events.flatMap((e) => {
        const id = e.activityTaskStartedEventAttributes?.identity;
        return id && !notifyScheduled(events).has(String(e.activityTaskStartedEventAttributes!.scheduledEventId))
          ? [Number(/(\d+)@|:(\d+)$/.exec(id)?.slice(1).find(Boolean))]
          : [];
      }),
    ),
  ],
  // Except a park's notify activity: its queue is no version's, the unversioned notifier takes it.
  notifiers: [
    ...new Set(
      events.flatMap((e) => {
        const a = e.activityTaskStartedEventAttributes;
        return a && notifyScheduled(events).has(String(a.scheduledEventId)) ? [String(a.identity).split('@')[0]] : [];
      }),
    ),
  ],
});
/** The event IDs of the notify activities a run scheduled. */
const notifyScheduled = (events: Event[]) =>
  new Set(
    events
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'notifyPark')
      .map((e) => String(e.eventId)),
  );

const WORKER_V2 = join(ROOT, 'dist', 'test', 'support', 'versioning', 'workerV2.js');

/** `temporal <args>` against the test server, its JSON output parsed (bounded). */
function temporalCli(args: string[], json = true): Promise<unknown> {
  const s = server!;
  const all = [...args, '--address', s.address, '--namespace', 'default', ...(json ? ['-o', 'json'] : [])];
  return new Promise((resolve, reject) =>
    execFile(s.cliPath, all, { timeout: 20_000, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`temporal ${args.join(' ')}: ${stderr.trim() || err.message}`));
      resolve(json && stdout.trim() ? JSON.parse(stdout) : stdout);
    }),
  );
}

/** A webhook receiver that keeps the Idempotency-Key of each POST. */
async function receiver() {
  const keys: string[] = [];
  const server = http.createServer((req, res) => {
    keys.push(String(req.headers['idempotency-key']));
    req.resume().on('end', () => res.writeHead(200).end('ok'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    keys,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('deploying while turns wait (Worker Deployment Versioning)', function () {
  this.timeout(240_000);
  let dir: string | undefined;
  // Read in before(): at describe time the shared server's root hook has not set it yet.
  let sharedAddress: string | undefined;
  before(async function () {
    this.timeout(90_000);
    sharedAddress = process.env.TEMPORAL_ADDRESS;
    dir = mkdtempSync(join(tmpdir(), 'openworker-versioning-'));
    server = await startDevServer({
      port: 0,
      headless: true,
      dbFile: join(dir, 'temporal.db'),
      dynamicConfig: DYNAMIC_CONFIG,
    });
    process.env.TEMPORAL_ADDRESS = server.address;
  });
  after(async function () {
    this.timeout(30_000);
    process.env.TEMPORAL_ADDRESS = sharedAddress;
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  const w = useWorld();
  // The approvals app and the webhook receiver, closed even when the test fails.
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  it('parked turns finish on v1, new turns and upgraded sessions run on v2, then v1 is drained and deleted', async () => {
    const t0 = Date.now();
    const mark = (what: string) =>
      process.env.OPENWORKER_TEST_TIMINGS && console.log(`  ${Date.now() - t0} ms ${what}`);
    const deployment = uniq('openworker');
    const dep = ['--deployment-name', deployment];
    // Each session's transcript picks the step: a first turn asks to send an email (parks), the
    // approval's answer, then one reply per later turn.
    const model = scripted([
      { text: 'Sending.', toolCalls: [emailCall('c1')] },
      { text: 'Sent.' },
      { text: 'Second turn.' },
    ]);
    const c = w.c;
    const history = (workflowId: string, runId?: string) => historyOf(c, workflowId, runId);
    const versioning = async (workflowId: string, runId?: string) => {
      const d = await c.client.workflow.getHandle(workflowId, runId).describe();
      const v = d.raw.workflowExecutionInfo?.versioningInfo;
      return { runId: d.runId, status: d.status.name, buildId: v?.deploymentVersion?.buildId, behavior: v?.behavior };
    };
    const onVersion = async (buildId: string) =>
      Number(
        (
          (await temporalCli([
            'workflow',
            'count',
            '--query',
            `ExecutionStatus = 'Running' AND TemporalWorkerDeploymentVersion = '${deployment}:${buildId}'`,
          ])) as { count?: string }
        ).count ?? 0,
      );

    // v1: the released build, made current, with notifications on; the approvals app's notifier (an
    // unversioned activity worker on `<queue>-notify`) POSTs to a receiver here.
    const v1 = await w.worker(model, { extraArgs: [...dep, '--build-id', 'v1'], env: { OPENWORKER_NOTIFY: 'on' } });
    const hook = await receiver();
    const approvals = await startApprovalsServer(c, {
      port: 0,
      tokensFile: join(dir!, 'tokens.json'),
      notify: [hook.url],
      publicUrl: 'https://approvals.example.com/',
    });
    closers.push(hook.close, approvals.close);
    assert.match(v1.output(), new RegExp(`deployment ${deployment} build v1`));
    await eventually(
      () => temporalCli(['worker', 'deployment', 'set-current-version', ...dep, '--build-id', 'v1', '--yes'], false),
      'v1 becomes current',
    );

    mark('v1 current');
    // Four sessions park a turn on v1; C's and E's are approved before the deploy, so they wait idle on v1.
    const [a, b, cc, e] = [uniq('va'), uniq('vb'), uniq('vc'), uniq('ve')];
    const parked = await Promise.all([a, b, cc, e].map((s) => startTurn(c, s, 'tell bob hello')));
    for (const t of parked) assert.equal(t.state, 'awaiting_approval');
    const approve = async (sessionId: string) => {
      const res = await runCli(['approve', sessionId, 'c1', '--by', 'alice', '--task-queue', w.taskQueue]);
      assert.equal(res.code, 0, res.stderr);
    };
    // A pinned turn's notify activity is delivered: its queue is in no version, so the server hands it
    // to the unversioned notifier (docs/deploy.md, "Notifications").
    const notified = await Promise.all(
      parked
        .slice(0, 2)
        .map((t) =>
          eventually(
            async () => (await turnStatus(c, t.workflowId)).ledger[0]!.events.find((x) => x.type === 'notified'),
            'a pinned turn notified',
          ),
        ),
    );
    for (const n of notified) assert.deepEqual([n.delivered, n.failed, /^approvals-/.test(String(n.by))], [1, 0, true]);
    await Promise.all([cc, e].map(approve));
    for (const t of parked.slice(2))
      await eventually(async () => (await turnStatus(c, t.workflowId)).closed, 'C and E turn 1 ends');
    const sessionRun1 = await Promise.all([a, b, cc, e].map((s) => versioning(sessionWorkflowId(s))));
    for (const s of sessionRun1) assert.deepEqual([s.buildId, s.behavior], ['v1', PINNED]);
    // Open on v1: four sessions and A's and B's turns (the query docs/deploy.md gives for the cutoff).
    assert.equal(await eventually(async () => (await onVersion('v1')) === 6 && 6, 'six runs on v1'), 6);

    mark('parked on v1');
    // v2: a build whose turn workflow is incompatible, made current while A and B wait. Incompatible
    // indeed: a parked v1 turn's history does not replay on it (so a turn that v2 took would fail).
    const [v2, v2Bundle] = await Promise.all([
      w.worker(model, { script: WORKER_V2, extraArgs: [...dep, '--build-id', 'v2'] }),
      bundleWorkflowCode({
        workflowsPath: require.resolve('./support/versioning/turnV2'),
        ...workflowBundlerOptions,
        logger: quietLogger,
      }),
    ]);
    await assert.rejects(
      Worker.runReplayHistory(
        { workflowBundle: v2Bundle, sinks: faultSinks(), dataConverter: defaultDataConverter(process.env) },
        { events: await history(parked[0]!.workflowId) },
        parked[0]!.workflowId,
      ),
      /nondetermin/i,
    );
    await eventually(
      async () =>
        JSON.stringify(
          await temporalCli(['worker', 'deployment', 'describe-version', ...dep, '--build-id', 'v2']),
        ).includes(w.taskQueue),
      'v2 polls the task queue',
    );
    await eventually(
      () => temporalCli(['worker', 'deployment', 'set-current-version', ...dep, '--build-id', 'v2', '--yes'], false),
      'v2 becomes current',
    );
    const described = (await temporalCli(['worker', 'deployment', 'describe', '--name', deployment])) as Described;
    assert.equal(described.routingConfig.currentVersionBuildID, 'v2');
    assert.deepEqual(summaries(described), { v1: 'draining', v2: 'unspecified' });

    mark('v2 current');
    // The parked turns are approved: they finish on v1, with no task failed.
    await Promise.all([a, b].map(approve));
    for (const t of parked.slice(0, 2)) {
      const done = await eventually(async () => {
        const s = await turnStatus(c, t.workflowId);
        return s.closed && s;
      }, 'a parked turn ends');
      assert.equal(done.state, 'completed');
      assert.equal(done.ledger[0]!.state, 'succeeded');
      assert.deepEqual(whoRan(await history(t.workflowId)), {
        builds: ['v1'],
        failedTasks: 0,
        v2Timer: false,
        activityPids: [v1.proc.pid],
        notifiers: [String(notified[0]!.by)],
      });
    }
    assert.equal(w.sink.messages().length, 4, 'one email per approval');
    for (const t of parked.slice(0, 2))
      assert.equal(
        hook.keys.filter((k) => k === `${t.ledger[0]!.executionId}:approval`).length,
        1,
        'one POST per park',
      );

    mark('parked turns finished on v1');
    // A and B continue as new onto v2 once their turn ended; C only when a message comes.
    for (const [i, s] of [a, b].entries()) {
      const moved = await eventually(async () => {
        const now = await versioning(sessionWorkflowId(s));
        return now.runId !== sessionRun1[i]!.runId && now.buildId === 'v2' && now;
      }, `session ${s} moves to v2`);
      assert.equal(moved.behavior, PINNED);
    }
    await recordHistory(sessionWorkflowId(a), 'session-upgrade-after-turn', undefined, {
      runId: sessionRun1[0]!.runId,
    });

    mark('sessions moved to v2');
    // New turns run on v2: an existing session's next turn, the idle session's, and a new session's.
    const d = uniq('vd');
    const [a2, c2] = await Promise.all([a, cc].map((s) => startTurn(c, s, 'and now?')));
    const sent = await sendMessage(c, { sessionId: d, text: 'tell bob hello' });
    const d1 = await waitForTurn(c, { sessionId: d, messageId: sent.messageId, timeoutMs: 30_000 });
    assert.deepEqual([a2!.state, a2!.text, c2!.state], ['completed', 'Second turn.', 'completed']);
    assert.equal(d1.state, 'awaiting_approval');
    for (const t of [a2!, c2!, d1]) {
      // v2's worker defaults to AUTO_UPGRADE: the turn pins itself.
      assert.equal((await versioning(t.workflowId)).behavior, PINNED);
      assert.deepEqual(whoRan(await history(t.workflowId)), {
        builds: ['v2'],
        failedTasks: 0,
        v2Timer: true,
        activityPids: [v2.proc.pid],
        notifiers: [],
      });
    }
    const cRun1 = await history(sessionWorkflowId(cc), sessionRun1[2]!.runId);
    assert.ok(cRun1.at(-1)!.workflowExecutionContinuedAsNewEventAttributes, 'C continued as new');
    assert.equal((await versioning(sessionWorkflowId(cc))).buildId, 'v2');
    await recordHistory(sessionWorkflowId(cc), 'session-upgrade-on-message', undefined, {
      runId: sessionRun1[2]!.runId,
    });
    await approve(d);

    mark('new turns on v2');
    // E got no message: it would keep v1 draining. One batch signal wakes every session left on v1.
    assert.equal((await versioning(sessionWorkflowId(e))).buildId, 'v1');
    await temporalCli(
      [
        'workflow',
        'signal',
        '--name',
        'wake',
        '--query',
        `WorkflowType='session' AND ExecutionStatus='Running' AND TemporalWorkerDeploymentVersion='${deployment}:v1'`,
        '--reason',
        'move idle sessions to v2',
        '--yes',
      ],
      false,
    );
    await eventually(async () => (await versioning(sessionWorkflowId(e))).buildId === 'v2', 'E moves to v2');
    await recordHistory(sessionWorkflowId(e), 'session-upgrade-on-wake', undefined, { runId: sessionRun1[3]!.runId });
    mark('idle sessions woken onto v2');

    // Retire v1: nothing open is pinned to it, its version drains, its worker stops, the version goes.
    assert.equal(await onVersion('v1'), 0);
    await eventually(
      async () =>
        summaries((await temporalCli(['worker', 'deployment', 'describe', '--name', deployment])) as Described).v1 ===
        'drained',
      'v1 drained',
      60_000,
    );
    const v1Described = JSON.stringify(
      await temporalCli(['worker', 'deployment', 'describe-version', ...dep, '--build-id', 'v1']),
    );
    assert.match(v1Described, /drained/i);
    mark('v1 drained');
    await v1.kill('SIGTERM');
    await eventually(
      () => temporalCli(['worker', 'deployment', 'delete-version', ...dep, '--build-id', 'v1'], false),
      'v1 deleted',
      60_000,
    );
    mark('v1 deleted');
    const after = (await temporalCli(['worker', 'deployment', 'describe', '--name', deployment])) as Described;
    assert.deepEqual(Object.keys(summaries(after)), ['v2']);
    await v2.kill('SIGTERM');
  });
});
