import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { workflowBundlerOptions } from '../../../worker/bundle';
import { OpenWorkerPlugin } from '../../../worker/plugin';
import { loadToolModule } from '../../../worker/worker';
import { deploymentVersion } from '../../../runtime/deployment';
import { processSettings } from '../../../runtime/settings';
import { quietLogger } from '../quietLogger';

// A worker process of a later build (./turnV2.ts), for test/versioning.test.ts: what `openworker-temporal
// worker` runs, with that build's workflows bundled at start instead of the prebuilt bundle. Takes the
// worker command's flags that test uses: --task-queue, --model, --tools, --deployment-name, --build-id.

function flags(argv: string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i]!.replace(/^--/, '');
    out.set(name, [...(out.get(name) ?? []), argv[i + 1] ?? '']);
  }
  return out;
}

async function main(): Promise<void> {
  const f = flags(process.argv.slice(2));
  const one = (name: string): string | undefined => f.get(name)?.[0];
  const settings = processSettings();
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const version = deploymentVersion({ deploymentName: one('deployment-name'), buildId: one('build-id') });
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('./turnV2'),
    ...workflowBundlerOptions,
    logger: quietLogger,
  });
  const tools = (await Promise.all((f.get('tools') ?? []).map((m) => loadToolModule(m)))).flat();
  const connection = await NativeConnection.connect({ address: settings.env.TEMPORAL_ADDRESS ?? 'localhost:7233' });
  const taskQueue = one('task-queue')!;
  const worker = await Worker.create({
    connection,
    namespace: settings.env.TEMPORAL_NAMESPACE ?? 'default',
    taskQueue,
    workflowBundle: { code },
    plugins: [new OpenWorkerPlugin({ model: one('model') ?? 'demo', tools, builtins: true, settings })],
    // Unlike `openworker-temporal worker` (PINNED by default), so that the test sees the workflows pin
    // themselves (workflows/versioning.ts), as they do in a worker of yours with another default.
    ...(version
      ? { workerDeploymentOptions: { useWorkerVersioning: true, version, defaultVersioningBehavior: 'AUTO_UPGRADE' } }
      : {}),
  });
  process.once('SIGTERM', () => worker.shutdown());
  process.once('SIGINT', () => worker.shutdown());
  console.log(
    `worker ready: task queue ${taskQueue}, build v2 variant${version ? `, deployment ${version.deploymentName} build ${version.buildId}` : ''}`,
  );
  try {
    await worker.run();
  } finally {
    await connection.close();
  }
}

main().catch((err) => {
  console.error(`workerV2: ${(err as Error).message}`);
  process.exit(1);
});
