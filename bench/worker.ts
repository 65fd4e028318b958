import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createRegistry } from '../activities/registry';
import { createWorker } from '../worker/worker';
import { runTurnInProcess } from './loop';
import { benchModel, benchTools } from './workload';

// A benchmark worker process: `node dist/bench/worker.js <b2|b3> <taskQueue> [maxCachedWorkflows]`.
// Prints BENCH_WORKER_READY once it polls.

Runtime.install({ logger: new DefaultLogger('WARN') });

async function main(): Promise<void> {
  const [system, taskQueue, cache] = process.argv.slice(2);
  if ((system !== 'b2' && system !== 'b3') || !taskQueue) throw new Error('usage: worker.js <b2|b3> <taskQueue> [maxCachedWorkflows]');
  const maxCachedWorkflows = cache ? Number(cache) : undefined;
  let worker: Worker;
  if (system === 'b3') {
    ({ worker } = await createWorker({ taskQueue, model: benchModel(), tools: benchTools, builtins: false, identity: `bench-b3-${process.pid}`, ...(maxCachedWorkflows !== undefined ? { maxCachedWorkflows } : {}) }));
  } else {
    const registry = createRegistry(benchTools);
    const model = benchModel();
    worker = await Worker.create({
      connection: await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' }),
      taskQueue,
      workflowsPath: require.resolve('./naiveWorkflow'),
      activities: { runTurnLoop: (message: string) => runTurnInProcess(model, registry, message) },
      identity: `bench-b2-${process.pid}`,
      ...(maxCachedWorkflows !== undefined ? { maxCachedWorkflows } : {}),
    });
  }
  const running = worker.run();
  console.log('BENCH_WORKER_READY');
  process.once('SIGTERM', () => worker.shutdown());
  await running;
}

main().catch((err) => {
  console.error(`bench worker: ${(err as Error).message}`);
  process.exit(1);
});
