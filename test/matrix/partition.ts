import { strict as assert } from 'node:assert';
import { tsToMs } from '@temporalio/common/lib/time';
import { recover } from '../../client/decisions';
import { turnStatus } from '../../client/session';
import { activityIdFor, pendingFence } from '../../workflows/ledger';
import type { LedgerEntry } from '../../workflows/types';
import { taskFailuresIn } from '../support/eventCounts';
import { startPartitionProxy } from '../support/partition';
import { eventually } from '../support/scenario';
import type { CellContext, CellReport } from './runner';

/**
 * F14 (cells.ts): W1 reaches Temporal through a proxy and sends the call's message to a slow SMTP
 * server that holds it uncommitted; the proxy partitions W1 (its process and its SMTP connection
 * live on); W2 starts on the server directly; the call parks (heartbeat timeout); a person decides
 * "retry" with the CLI. Once the retry's message reaches the sink, the held first message is
 * released: the sink commits it only if W1 is still connected.
 *
 * Fenced (the default), the retry starts after W1's window, W1 has hung up (its SDK cancels the
 * attempt once its heartbeats go unacknowledged for the heartbeat timeout + 5 s, at the latest its
 * AbortSignal fires at its start-to-close) and the first message is abandoned: one effect. With `now` (`--now`) the
 * retry runs while W1 still holds its connection and both messages commit: two effects, the
 * hazard that `--now` accepts. Nothing here sleeps: it waits on the sink's barriers and the ledger.
 */

export interface PartitionRun {
  executionId: string;
  workflowId: string;
  /** The CLI's answer to the fenced recover decision. */
  stdout?: string;
  /** `show` and `inbox` while the fence was pending (fenced runs only). */
  views?: { show: string; inbox: string };
  fence?: { until: string; attempt: number };
  /** When the retry's execute activity was scheduled, from history. */
  retryScheduledAt: number;
  /** The first message's transaction once released: `abandoned` or `stored`. */
  firstOutcome: string;
  deliveries: number;
  entry: LedgerEntry;
  workflowTaskFailures: number;
  /** Workflow tasks handed to a worker that never answered (W1 behind the partition). */
  workflowTaskTimeouts: number;
  /** Connections W1 opened to the proxy, and how many of them during the partition. */
  proxy: { accepted: number; heldInPartition: number };
  /** Milliseconds after the first dispatch: the park, the decision, the fence's end, the retry. */
  timeline: Record<string, number>;
  /** What the cut-off worker printed. */
  w1Output: string;
}

/** `OPENWORKER_TEST_TRACE=1` prints each run's timeline. */
export function trace(label: string, r: PartitionRun): void {
  if (process.env.OPENWORKER_TEST_TRACE)
    console.log(
      `      ${label}: ${JSON.stringify({ ...r.timeline, firstOutcome: r.firstOutcome, deliveries: r.deliveries, proxy: r.proxy, workflowTaskTimeouts: r.workflowTaskTimeouts })}`,
    );
  if (process.env.OPENWORKER_TEST_TRACE === 'w1') console.log(r.w1Output);
}

const RECOVER_TIMEOUT_MS = 60_000;

export async function partitionedRetry(ctx: CellContext, { now }: { now: boolean }): Promise<PartitionRun> {
  const { peer } = ctx;
  const proxy = await startPartitionProxy(ctx.c().address);
  try {
    const w1 = await ctx.worker({ extraEnv: { TEMPORAL_ADDRESS: proxy.address } });
    const t = await ctx.startParked();
    const { executionId } = t.entry;
    await peer.arm('slow-commit', executionId, ctx.args);
    await ctx.approve({ sessionId: t.sessionId, toolCallId: 'c1', argsDigest: t.entry.argsDigest, workerUp: true });
    await peer.barrier('slow', executionId); // W1 sent DATA; the sink holds it, nothing committed
    proxy.partition();
    await ctx.worker(); // W2, on the server directly

    const status = () => turnStatus(ctx.c(), t.workflowId);
    const entry = async () => (await status()).ledger.find((e) => e.toolCallId === 'c1')!;
    const parked = await eventually(
      async () => {
        const e = await entry();
        return e.state === 'recovery_required' && e;
      },
      `${ctx.cell.id}: the call parks`,
      RECOVER_TIMEOUT_MS,
    );
    const reason = String(parked.events.filter((ev) => ev.type === 'recovery_required').at(-1)?.reason);
    assert.match(reason, ctx.cell.expect.parks![0]!, 'the call parks: outcome unknown after dispatch');
    assert.equal(
      (await peer.observe(executionId)).effects.length,
      0,
      'parked with the first message held, not committed',
    );

    const run: Partial<PartitionRun> = { executionId, workflowId: t.workflowId };
    if (!now) {
      const cli = await ctx.cliRetry(t.sessionId, 'alice');
      assert.equal(cli.code, 0, `recover: ${cli.stdout}${cli.stderr}`);
      run.stdout = cli.stdout;
      const said = /the retry waits out attempt (\d+) until (\S+) /.exec(cli.stdout);
      assert.ok(said, `the CLI names the fence: ${cli.stdout}`);
      const e = await entry();
      const fence = pendingFence(e);
      assert.deepEqual(
        fence && { attempt: fence.attempt, until: fence.until },
        { attempt: Number(said[1]), until: said[2] },
        'the ledger records the fence the CLI printed',
      );
      assert.equal(fence!.by, 'alice');
      run.fence = { until: fence!.until, attempt: fence!.attempt };
      // What a person sees while it waits (the fence is 30 s long; these take a second or two).
      const [show, inbox] = await Promise.all([
        ctx.cli(['show', t.sessionId]),
        ctx.cli(['inbox', '--session', t.sessionId]),
      ]);
      assert.ok(pendingFence(await entry()), 'still fenced after show and inbox ran');
      run.views = { show: show.stdout, inbox: inbox.stdout };
    } else {
      // `recover --now` through the library: W1's worker gives up (its SDK's local heartbeat timer,
      // heartbeat timeout + 5 s after its last delivered heartbeat) about 5 s after the park, and
      // starting a CLI process took up to 4 s of that on a loaded machine.
      const r = await recover(ctx.c(), {
        sessionId: t.sessionId,
        toolCallId: 'c1',
        by: 'alice',
        decision: 'retry',
        skipFence: true,
      });
      assert.equal(r.outcome, 'applied', r.why);
      assert.equal(r.fence, undefined, '--now does not wait');
    }

    // The retry's message is the first the sink stores (the held one is not stored until released).
    await peer.barrier('stored', executionId, RECOVER_TIMEOUT_MS);
    await peer.release(executionId);
    // The held transaction is the first of the message ID: W1's DATA came before the retry's.
    const first = await eventually(async () => {
      const o = (await peer.observe(executionId)).requests[0];
      return o && o.outcome !== 'held' && o;
    }, `${ctx.cell.id}: the held message is released`);
    const closed = await eventually(
      async () => {
        const s = await status();
        return s.closed && s;
      },
      `${ctx.cell.id}: the turn closes`,
      RECOVER_TIMEOUT_MS,
    );

    const history = (await ctx.c().client.workflow.getHandle(t.workflowId).fetchHistory()).events ?? [];
    const retry = history.find(
      (ev) => ev.activityTaskScheduledEventAttributes?.activityId === activityIdFor(executionId, 2),
    );
    assert.ok(retry, 'the retry was scheduled');
    const final = closed.ledger.find((e) => e.toolCallId === 'c1')!;
    const at = (type: string) => Date.parse(String(final.events.find((ev) => ev.type === type)?.at));
    const t0 = at('dispatched');
    const since = (ms: number) => Math.round(ms - t0);
    return {
      timeline: {
        parked: since(at('recovery_required')),
        decided: since(at('recovery_decided')),
        ...(run.fence ? { fenceUntil: since(Date.parse(run.fence.until)) } : {}),
        ...(first.hungUpAt ? { w1HungUp: since(Date.parse(first.hungUpAt)) } : {}),
        retryScheduled: since(tsToMs(retry.eventTime)),
        closed: since(Date.parse(String(final.events.at(-1)?.at))),
      },
      ...run,
      retryScheduledAt: tsToMs(retry.eventTime),
      firstOutcome: first.outcome,
      deliveries: (await peer.observe(executionId)).effects.length,
      entry: closed.ledger.find((e) => e.toolCallId === 'c1')!,
      workflowTaskFailures: taskFailuresIn(history).length,
      workflowTaskTimeouts: history.filter((ev) => ev.workflowTaskTimedOutEventAttributes).length,
      proxy: proxy.stats(),
      w1Output: w1.output(),
    } as PartitionRun;
  } finally {
    await proxy.close();
  }
}

/** The matrix cell: fenced, checked by the three oracles and by what the fence promises. */
export async function partitionRetry(ctx: CellContext): Promise<CellReport> {
  const r = await partitionedRetry(ctx, { now: false });
  trace(ctx.cell.id, r);
  const until = Date.parse(r.fence!.until);
  assert.ok(
    r.retryScheduledAt >= until,
    `the retry was scheduled at ${new Date(r.retryScheduledAt).toISOString()}, before the fence ${r.fence!.until}`,
  );
  assert.equal(
    r.firstOutcome,
    'abandoned',
    'the cut-off attempt had hung up before the retry: its message is never committed',
  );
  const { w1HungUp, retryScheduled } = r.timeline;
  assert.ok(
    w1HungUp !== undefined && w1HungUp < retryScheduled!,
    `W1 hung up before the retry was scheduled: ${JSON.stringify(r.timeline)}`,
  );
  assert.equal(r.workflowTaskFailures, 0, 'no workflow task failed');
  const fenced = `waiting out attempt ${r.fence!.attempt} until ${r.fence!.until}`;
  assert.ok(r.views!.show.includes(fenced), `show names the fence:\n${r.views!.show}`);
  assert.ok(r.views!.inbox.includes(fenced), `inbox names the fence:\n${r.views!.inbox}`);
  // send_email without a lookup URL has no reconcile(): the screens say the first attempt may still land.
  const hazard = 'send_email has no reconcile(): an earlier attempt may still land';
  assert.ok(r.views!.show.includes(hazard), `show says a retry cannot check:\n${r.views!.show}`);
  assert.ok(r.views!.inbox.includes(hazard), `inbox says a retry cannot check:\n${r.views!.inbox}`);
  return ctx.finish({
    workflowId: r.workflowId,
    executionId: r.executionId,
    extraChecks: [
      'partition: the CLI, the ledger, show and inbox name the fence',
      'partition: show and inbox say the tool has no reconcile(), so the fence proves nothing',
      'partition: the retry was scheduled no earlier than the fence',
      "partition: the cut-off attempt's message was abandoned, never committed",
    ],
  });
}
