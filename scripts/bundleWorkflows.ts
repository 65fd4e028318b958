import { bundleWorkflowCode } from '@temporalio/worker';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { workflowBundlerOptions } from '../worker/bundle';

// Bundling takes seconds; doing it at build time makes every worker start (and every crash-test
// restart) fast. The worker falls back to bundling at start-up when this file is missing.
async function main(): Promise<void> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    ...workflowBundlerOptions,
    logger: quiet,
  });
  const out = join(__dirname, '..', 'workflow-bundle.js');
  writeFileSync(out, code);
}

const quiet = { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} };

main().catch((err) => {
  console.error(`bundling workflows failed: ${err.message}`);
  process.exit(1);
});
