import { ApplicationFailure } from '@temporalio/activity';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { loadMcpConfig } from '../../activities/mcp/config';
import { startMcp } from '../../activities/mcp/pool';
import { loadScript, scriptedModel } from '../../activities/models/scripted';
import { createRegistry } from '../../activities/registry';
import { ToolFailure } from '../../activities/tool';
import { defaultDataConverter } from '../../runtime/dataConverter';
import { idiomaticActivities } from '../idiomaticActivities';

// The naive side of `npm run bench:tau2`: `node naiveWorker.js <taskQueue> <script.json> <mcp.json>`.
// The idiomatic Temporal agent loop (bench/idiomaticWorkflow.ts) over the same MCP tools, called the
// same way (the SDK client, the execution ID in _meta), but every tool call a plain activity that
// Temporal retries by itself: no dispatch marker, no recovery policy. Prints BENCH_WORKER_READY.

Runtime.install({ logger: new DefaultLogger('WARN') });

async function main(): Promise<void> {
  const [taskQueue, script, mcpFile] = process.argv.slice(2);
  if (!taskQueue || !script || !mcpFile) throw new Error('usage: naiveWorker.js <taskQueue> <script.json> <mcp.json>');
  const mcp = await startMcp(loadMcpConfig(mcpFile, process.env), { log: (l) => console.error(l) });
  const base = idiomaticActivities(scriptedModel(loadScript(script), script), createRegistry(mcp.tools()));
  const worker = await Worker.create({
    connection: await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' }),
    taskQueue,
    workflowsPath: require.resolve('../idiomaticWorkflow'),
    activities: {
      ...base,
      // What the tool itself reports as failed (tau2 refusing an action) is final; anything else is retried.
      async runTool(call: Parameters<typeof base.runTool>[0]) {
        try {
          return await base.runTool(call);
        } catch (err) {
          if (err instanceof ToolFailure) throw ApplicationFailure.nonRetryable(err.message);
          throw err;
        }
      },
    },
    identity: `tau2-naive-${process.pid}`,
    dataConverter: defaultDataConverter(),
  });
  const running = worker.run();
  console.log('BENCH_WORKER_READY');
  process.once('SIGTERM', () => worker.shutdown());
  await running;
  await mcp.close();
}

main().catch((err) => {
  console.error(`tau2 naive worker: ${(err as Error).message}`);
  process.exit(1);
});
