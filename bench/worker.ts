import { Context } from '@temporalio/activity';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createRegistry } from '../activities/registry';
import { defaultDataConverter } from '../runtime/dataConverter';
import { createWorker } from '../worker/worker';
import type { PrimitiveActivities } from './breakdownWorkflow';
import { idiomaticActivities } from './idiomaticActivities';
import { runTurnInProcess } from './loop';
import { benchModel, benchTools } from './workload';

// A benchmark worker process: `node dist/bench/worker.js <b1|b2|b3|prim> <taskQueue> [maxCachedWorkflows]`
// (prim: the primitives bench:breakdown prices, bench/breakdownWorkflow.ts).
// Prints BENCH_WORKER_READY once it polls. BENCH_METRICS_PORT exposes the SDK's Prometheus metrics
// (workflow task execution time inside the worker); BENCH_ARM_ON_USR2 arms fault points on SIGUSR2,
// so a driver can crash a worker mid-run at a point the worker itself reports.

const metricsPort = process.env.BENCH_METRICS_PORT;
Runtime.install({
  logger: new DefaultLogger('WARN'),
  // The SDK's default list includes SIGUSR2, which this process uses to arm a fault point.
  shutdownSignals: ['SIGINT', 'SIGTERM'],
  ...(metricsPort
    ? { telemetryOptions: { metrics: { prometheus: { bindAddress: `127.0.0.1:${metricsPort}` } } } }
    : {}),
});

const arm = process.env.BENCH_ARM_ON_USR2;
if (arm) process.on('SIGUSR2', () => (process.env.OPENWORKER_FAULTS = arm));

async function main(): Promise<void> {
  const [system, taskQueue, cache] = process.argv.slice(2);
  if (!['b1', 'b2', 'b3', 'prim'].includes(system!) || !taskQueue)
    throw new Error('usage: worker.js <b1|b2|b3|prim> <taskQueue> [maxCachedWorkflows]');
  const maxCachedWorkflows = cache ? Number(cache) : undefined;
  const identity = `bench-${system}-${process.pid}`;
  const sticky = process.env.BENCH_STICKY_TIMEOUT;
  let worker: Worker;
  if (system === 'b3') {
    ({ worker } = await createWorker({
      taskQueue,
      model: benchModel(),
      tools: benchTools,
      builtins: false,
      mcp: [], // the bench's tools only, whatever OPENWORKER_MCP says
      identity,
      ...(sticky ? { stickyQueueTimeout: sticky } : {}),
      ...(maxCachedWorkflows !== undefined ? { maxCachedWorkflows } : {}),
    }));
  } else {
    const registry = createRegistry(benchTools);
    const model = benchModel();
    worker = await Worker.create({
      connection: await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' }),
      taskQueue,
      ...(system === 'prim'
        ? { workflowsPath: require.resolve('./breakdownWorkflow'), activities: primitiveActivities() }
        : system === 'b1'
          ? { workflowsPath: require.resolve('./idiomaticWorkflow'), activities: idiomaticActivities(model, registry) }
          : {
              workflowsPath: require.resolve('./naiveWorkflow'),
              activities: { runTurnLoop: (message: string) => runTurnInProcess(model, registry, message) },
            }),
      identity,
      // The same payload codecs as ours (encryption when keys are set), so a variant compares like with like.
      dataConverter: defaultDataConverter(),
      ...(maxCachedWorkflows !== undefined ? { maxCachedWorkflows } : {}),
    });
  }
  const running = worker.run();
  console.log('BENCH_WORKER_READY');
  process.once('SIGTERM', () => worker.shutdown());
  await running;
}

/** The primitives' activities: nothing, or `n` heartbeats each awaited at the server (as the dispatch marker is). */
function primitiveActivities(): PrimitiveActivities {
  return {
    noop: async () => 0,
    async heartbeats(n) {
      const ctx = Context.current();
      for (let i = 0; i < n; i++) await ctx.client.activity.heartbeat(ctx.info.taskToken, { i });
      return n;
    },
  };
}

main().catch((err) => {
  console.error(`bench worker: ${(err as Error).message}`);
  process.exit(1);
});
