import { strict as assert } from 'node:assert';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_WORKFLOWS_MODULE, combinedSource, workflowsPathWith } from '../../worker/workflowModules';

// The module OpenWorkerPlugin bundles when your worker has workflows of its own.

describe('workflowModules: your workflows beside the agent turn', () => {
  let dir: string;
  before(() => {
    // Inside the checkout: @temporalio/workflow resolves from there, as from a user's project.
    mkdirSync(join(__dirname, '..', '..', '..', 'test-artifacts'), { recursive: true });
    dir = mkdtempSync(join(__dirname, '..', '..', '..', 'test-artifacts', 'wfmod-'));
    writeFileSync(join(dir, 'flows.ts'), 'export async function mine() {}\n');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('exports yours and names ours explicitly, with whole file paths (ESM packages take nothing else)', () => {
    const src = combinedSource(join(dir, 'flows'), '/x/dist/workflows/index.js');
    assert.match(src, new RegExp(`export \\* from "${join(dir, 'flows.ts')}";`));
    assert.match(
      src,
      /export \{ session, agentTurn, toolNames, scheduledTurn \} from "\/x\/dist\/workflows\/index\.js";/,
    );
  });

  it('a workflows folder that cannot resolve @temporalio/workflow is refused in one line', () => {
    assert.throws(
      () => workflowsPathWith('/nonexistent/flows.js'),
      /^Error: OpenWorkerPlugin: @temporalio\/workflow cannot be resolved from your workflows/,
    );
  });

  it('ours alone, or a combined module already made, is taken as it is; the same input gives the same file', () => {
    assert.equal(workflowsPathWith(undefined), AGENT_WORKFLOWS_MODULE);
    assert.equal(workflowsPathWith(AGENT_WORKFLOWS_MODULE), AGENT_WORKFLOWS_MODULE);
    const combined = workflowsPathWith(join(dir, 'flows.ts'));
    assert.match(combined, /[\\/]node_modules[\\/]\.cache[\\/]openworker-temporal[\\/]workflows-[0-9a-f]{16}\.js$/);
    assert.equal(workflowsPathWith(join(dir, 'flows.ts')), combined);
    assert.equal(workflowsPathWith(combined), combined);
    assert.match(readFileSync(combined, 'utf8'), /export \{ session, agentTurn, toolNames, scheduledTurn \}/);
  });
});
