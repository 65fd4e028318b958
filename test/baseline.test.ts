import { strict as assert } from 'node:assert';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRunsQuery } from '../cli/baseline';
import type { OpenWorkerClient } from '../client/connection';
import { sendMessage } from '../client/session';
import { readStamp } from '../runtime/baseline';
import { BASELINE } from '../workflows/baseline';
import { sessionWorkflowId } from '../workflows/ids';
import { runCli, spawnWorker } from './support/processes';
import { client, eventually, uniq } from './support/scenario';

// `worker` on a state directory stamped by an older baseline (runtime/baseline.ts): a real worker
// process against the dev server refuses while a session is open on its queue, and starts (re-stamped)
// once none is.

describe('baseline stamp: a worker on an older state directory', function () {
  this.timeout(90_000);
  let dir: string;
  let c: OpenWorkerClient;
  let taskQueue: string;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'openworker-baseline-'));
    taskQueue = uniq('tq');
    c = await client(taskQueue);
  });
  afterEach(async () => {
    await c.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Waits until visibility reports `n` open runs on the queue, as the worker's check will count them. */
  const openRunsAre = (n: number) =>
    eventually(
      async () => (await c.client.workflow.count(openRunsQuery(taskQueue, false))).count === n,
      `${n} open runs on the queue`,
    );

  it('refuses in one line (count, directory, the two ways out) while a session is open; re-stamps and starts once none is', async () => {
    const state = join(dir, 'state');
    const env = { OPENWORKER_STATE_DIR: state };
    // An older build ran here: its stamp, and its state (the directory holds more than the stamp).
    mkdirSync(join(state, 'payloads'), { recursive: true });
    writeFileSync(join(state, 'baseline'), '0\n');
    // A session of the real workflow types, open on the queue (started by the message; no worker needed).
    const sessionId = uniq('stamp');
    await sendMessage(c, { sessionId, text: 'hello' });
    await openRunsAre(1);

    const refused = await runCli(['worker', '--task-queue', taskQueue, '--model', 'demo'], {
      env,
      timeoutMs: 20_000,
    });
    assert.equal(refused.code, 1, refused.stdout + refused.stderr);
    assert.equal(refused.stdout, '', 'nothing started');
    const lines = refused.stderr.trim().split('\n');
    assert.equal(lines.length, 1, refused.stderr);
    assert.match(
      lines[0]!,
      new RegExp(
        `^error: 1 open run on task queue '${taskQueue}' .* \\(state directory ${state} is stamped with baseline 0; this build is baseline ${BASELINE}\\): drain them with the previous build, or start with a fresh state directory \\(OPENWORKER_STATE_DIR\\) on a new namespace or task queue`,
      ),
    );
    assert.equal(readStamp(state), 0, 'a refusal keeps the old stamp');

    await c.client.workflow.getHandle(sessionWorkflowId(sessionId)).terminate('drained');
    await openRunsAre(0);
    const worker = await spawnWorker({ taskQueue, model: 'demo', env });
    assert.equal(readStamp(state), BASELINE, worker.output());
    await worker.kill('SIGTERM');
  });
});
