import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { startDevServer } from '../dev/server';
import { OpenWorkerPlugin } from '../worker/plugin';
import { createWorker } from '../worker/worker';

// npm run bench:plugin: what OpenWorkerPlugin adds to a worker's start-up. Each sample is a fresh
// process timed from its start to Worker.create resolved (module loading and bundling included).

const ROOT = join(__dirname, '..', '..');
const CASES = ['own', 'own+plugin', 'prebundled', 'prebundled+plugin', 'plugin', 'createWorker'] as const;
type Case = (typeof CASES)[number];

const USER_WORKFLOWS = `
import { proxyActivities } from '@temporalio/workflow';
const { greet } = proxyActivities({ startToCloseTimeout: '10 seconds' });
export async function hello(name) { return greet(name); }
`;

async function sample(which: Case, address: string, workflowsPath: string, prebundled: string): Promise<number> {
  const ownBundle = prebundled.replace(/bundle\.js$/, 'own-bundle.js');
  const connection = await NativeConnection.connect({ address });
  const base = { connection, taskQueue: `startup-${process.pid}`, activities: { greet: async (n: string) => n } };
  let worker: Worker;
  if (which === 'own') worker = await Worker.create({ ...base, workflowsPath });
  else if (which === 'own+plugin')
    worker = await Worker.create({ ...base, workflowsPath, plugins: [new OpenWorkerPlugin()] });
  else if (which === 'prebundled') worker = await Worker.create({ ...base, workflowBundle: { codePath: ownBundle } });
  else if (which === 'prebundled+plugin')
    // Bundled at build time with bundleWorkflowCode({ workflowsPath, plugins: [plugin] }).
    worker = await Worker.create({
      ...base,
      workflowBundle: { codePath: prebundled },
      plugins: [new OpenWorkerPlugin()],
    });
  else if (which === 'plugin')
    worker = await Worker.create({ connection, taskQueue: base.taskQueue, plugins: [new OpenWorkerPlugin()] });
  else worker = (await createWorker({ connection, taskQueue: base.taskQueue, builtins: false })).worker;
  void worker;
  return performance.now();
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const [flag, which, address, workflowsPath, prebundled] = process.argv.slice(2);
  if (flag === '--sample') {
    Runtime.install({ logger: new DefaultLogger('WARN') });
    console.log(JSON.stringify({ ms: await sample(which as Case, address!, workflowsPath!, prebundled!) }));
    process.exit(0); // the worker never ran; nothing to drain
  }
  const runs = Number(process.env.STARTUP_RUNS ?? 5);
  mkdirSync(join(ROOT, 'test-artifacts'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, 'test-artifacts', 'startup-'));
  writeFileSync(join(dir, 'workflows.js'), USER_WORKFLOWS);
  const { code } = await bundleWorkflowCode({
    workflowsPath: join(dir, 'workflows.js'),
    plugins: [new OpenWorkerPlugin()],
    logger: new DefaultLogger('WARN'),
  });
  writeFileSync(join(dir, 'bundle.js'), code);
  const own = await bundleWorkflowCode({ workflowsPath: join(dir, 'workflows.js'), logger: new DefaultLogger('WARN') });
  writeFileSync(join(dir, 'own-bundle.js'), own.code);
  const server = await startDevServer({ port: 0, headless: true, dbFile: join(dir, 'temporal.db') });
  try {
    console.log(`worker start-up, median of ${runs} fresh processes (module loading + bundling + Worker.create)`);
    for (const which of CASES) {
      const ms: number[] = [];
      for (let i = 0; i < runs; i++) {
        const r = spawnSync(
          process.execPath,
          [__filename, '--sample', which, server.address, join(dir, 'workflows.js'), join(dir, 'bundle.js')],
          { encoding: 'utf8', timeout: 120_000 },
        );
        if (r.status !== 0) throw new Error(`${which}: ${r.stderr || r.error?.message}`);
        ms.push((JSON.parse(r.stdout.trim().split('\n').pop()!) as { ms: number }).ms);
      }
      console.log(`${which.padEnd(18)} ${Math.round(median(ms))} ms   (${ms.map(Math.round).join(', ')})`);
    }
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(`bench:plugin failed: ${(err as Error).message}`);
  process.exit(1);
});
