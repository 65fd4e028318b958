import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import type { ProbeMode } from './workflow';

// A bare Temporal worker that checks what the server does with an awaited heartbeat, the candidate
// dispatch marker of issue #16: `node main.js <address> <taskQueue> --exit-with-stdin`. It prints one
// JSON ready line, then `PROBE <event> <attempt> [json]` at each moment a test waits on.

const say = (event: string, attempt: number, data?: unknown): void => {
  console.log(`PROBE ${event} ${attempt}${data === undefined ? '' : ` ${JSON.stringify(data)}`}`);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The marker as the product would record it: awaited, so the answer says whether the server took it. */
async function mark(ctx: Context): Promise<void> {
  await ctx.client.activity.heartbeat(ctx.info.taskToken, { dispatched: true, attempt: ctx.info.attempt });
}

async function probe(mode: ProbeMode): Promise<unknown> {
  const ctx = Context.current();
  const { attempt } = ctx.info;
  // A later attempt reports what the server handed it from the attempt before, and ends.
  if (attempt > 1) {
    say('prior', attempt, ctx.info.heartbeatDetails ?? null);
    return { prior: ctx.info.heartbeatDetails ?? null };
  }
  if (mode === 'beat-until-cancelled' || mode === 'finish-after-cancel') {
    say('beating', attempt);
    for (;;) {
      try {
        await mark(ctx);
      } catch (err) {
        say('refused', attempt, (err as Error).name);
        // An attempt past its dispatch would finish its work instead of giving up.
        if (mode === 'finish-after-cancel') return { finished: true };
        throw ApplicationFailure.nonRetryable(`heartbeat refused: ${(err as Error).name}`, 'HeartbeatRefused');
      }
      await sleep(100);
    }
  }
  await mark(ctx);
  say('marked', attempt);
  if (mode === 'mark-then-late') {
    // No heartbeat at all until the server has timed this attempt out; then try the old task token.
    await sleep(3 * (ctx.info.heartbeatTimeoutMs ?? 1000));
    try {
      await mark(ctx);
      say('late', attempt, 'accepted');
    } catch (err) {
      say('late', attempt, (err as Error).name);
    }
  }
  await new Promise(() => undefined); // hangs until the process is killed
  return undefined;
}

async function main(): Promise<void> {
  const [address, taskQueue] = process.argv.slice(2).filter((a) => !a.startsWith('--'));
  if (!address || !taskQueue) throw new Error('usage: main.js <address> <taskQueue> [--exit-with-stdin]');
  if (process.argv.includes('--exit-with-stdin')) process.stdin.on('end', () => process.exit(0)).resume();
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address }),
    taskQueue,
    // A test that starts many probes bundles the workflow once (bundling takes seconds).
    ...(process.env.PROBE_BUNDLE
      ? { workflowBundle: { codePath: process.env.PROBE_BUNDLE } }
      : { workflowsPath: require.resolve('./workflow') }),
    activities: { probe },
  });
  const running = worker.run();
  console.log(JSON.stringify({ ready: true }));
  // Probe activities hang on purpose: a graceful shutdown would wait for them.
  process.once('SIGTERM', () => process.exit(0));
  await running;
}

main().catch((err) => {
  console.error(`heartbeat probe: ${(err as Error).message}`);
  process.exit(1);
});
