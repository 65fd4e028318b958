import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveTemporalCli } from '../dev/temporalCli';

/**
 * Negative controls (`npm run test:mutants`; `--quick` runs the CI subset): deliberately broken
 * builds that the fault matrix must catch. Each mutant is a copy of the compiled build with one
 * textual change; the matrix cells that should notice it run against the copy, and the mutant
 * counts as killed when they fail. A control run of the same cells on an unchanged copy must pass
 * first, or a "kill" would mean nothing.
 */

interface Mutant {
  name: string;
  /** What the broken build does. */
  what: string;
  file: string;
  find: string;
  replace: string;
  /** MATRIX_ONLY for the cells expected to catch it. */
  cells: string;
  quick?: boolean;
}

const BUNDLE = 'dist/workflow-bundle.js';
const ACTIVITIES = 'dist/activities/index.js';

export const MUTANTS: Mutant[] = [
  {
    name: 'manual-retries',
    what: 'Temporal retries enabled on a manual tool',
    file: BUNDLE,
    find: '? { maximumAttempts: 1 }',
    replace: "? { maximumAttempts: 5, initialInterval: '1s' }",
    cells: '^F5 smtp manual',
  },
  {
    name: 'random-key',
    what: 'a random idempotency key per attempt',
    file: ACTIVITIES,
    find: 'const toolCtx = {\n                    executionId: input.executionId,',
    replace:
      "const toolCtx = {\n                    executionId: 'owx-' + require('node:crypto').randomUUID().replace(/-/g, ''),",
    cells: '^F4 http idempotent',
    quick: true,
  },
  {
    name: 'runid-key',
    what: 'the execution ID derived from the run ID',
    file: BUNDLE,
    find: 'executionIdFor)(input.sessionId, input.turn, c.toolCallId)',
    replace: 'executionIdFor)((0, workflow_1.workflowInfo)().runId, input.turn, c.toolCallId)',
    cells: '^F12 \\(reset\\) http idempotent',
  },
  {
    name: 'workflow-retry-on',
    what: 'turns started with a workflow-level retry policy',
    file: BUNDLE,
    find: 'workflowIdReusePolicy: workflow_1.WorkflowIdReusePolicy.REJECT_DUPLICATE,',
    replace: 'retry: { maximumAttempts: 3 }, workflowIdReusePolicy: workflow_1.WorkflowIdReusePolicy.REJECT_DUPLICATE,',
    cells: '^F1 http manual',
  },
  {
    name: 'ignore-digest',
    what: 'approvals accepted whatever arguments digest they carry',
    file: BUNDLE,
    find: 'if (digest && digest !== entry.argsDigest) {',
    replace: 'if (false) {',
    cells: 'stale-digest',
    quick: true,
  },
  {
    name: 'no-recover-dedupe',
    what: 'recovery decisions not deduplicated',
    file: BUNDLE,
    find: 'if (recoveryPending)',
    replace: 'if (false)',
    cells: 'conflicting-recovers',
  },
  {
    name: 'no-synthetic-result',
    what: 'no synthetic result for a parked call when its turn ends',
    file: BUNDLE,
    find: 'return a.openCalls\n        .filter((c) => !answered.has(c.id))',
    replace: 'return a.openCalls\n        .filter((c) => !answered.has(c.id) && a.finished.has(c.id))',
    cells: 'cancel-parked',
  },
  {
    name: 'skip-dispatch-marker',
    what: 'the dispatch marker skipped',
    file: ACTIVITIES,
    find: 'if (input.protect) {',
    replace: 'if (false) {',
    cells: '^F5 smtp manual',
    quick: true,
  },
  {
    name: 'forgotten-key-trusted',
    what: '"not found" believed after the key retention passed',
    file: ACTIVITIES,
    find: 'const forgotten = await keyMayBeForgotten(tool, input, ctx.info, clock);',
    replace: 'const forgotten = undefined;',
    cells: '^F9 http reconcile',
  },
  {
    name: 'claim-foreign-effect',
    what: "reconcile claims another payment stored under the key as this call's",
    file: 'dist/activities/tools/payments.js',
    find: "if (stored.customer !== args.customer ||\n                            stored.amount !== args.amount ||\n                            stored.currency !== (args.currency ?? 'USD')) {",
    replace: 'if (false) {',
    cells: '^F10 http reconcile',
  },
  {
    name: 'blind-human-retry',
    what: "a person's retry runs without asking the tool's reconcile() (#27 hole 1)",
    file: BUNDLE,
    find: '(call.spec.hasReconcile, decision.by)',
    replace: '(false, decision.by)',
    cells: '^F7 http reconcile',
  },
];

const ROOT = join(__dirname, '..', '..');
const PER_RUN_MS = 6 * 60_000;

function copyBuild(): string {
  const dir = mkdtempSync(join(tmpdir(), 'openworker-mutant-'));
  cpSync(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true });
  cpSync(join(ROOT, 'bin'), join(dir, 'bin'), { recursive: true });
  cpSync(join(ROOT, 'test', 'fixtures'), join(dir, 'test', 'fixtures'), { recursive: true });
  cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  // The matrix ends with the independent checker, built from its Go source.
  symlinkSync(join(ROOT, 'checker'), join(dir, 'checker'), 'dir');
  return dir;
}

function mutate(dir: string, m: Mutant): void {
  const path = join(dir, m.file);
  const text = readFileSync(path, 'utf8');
  const count = text.split(m.find).length - 1;
  if (count !== 1)
    throw new Error(
      `mutant ${m.name}: expected the pattern once in ${m.file}, found it ${count} times; update the mutant to the current build`,
    );
  writeFileSync(path, text.replace(m.find, m.replace));
}

/** Runs the matrix cells matching `only` in the build at `dir`; resolves with the outcome. */
function runCells(dir: string, only: string, cli: string): Promise<{ passed: boolean; summary: string }> {
  return new Promise((resolve) => {
    const mocha = join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js');
    const args = [
      mocha,
      '--no-config',
      '--require',
      'dist/test/support/hooks.js',
      '--timeout',
      '60000',
      '--exit',
      'dist/test/matrix.test.js',
    ];
    const proc = spawn(process.execPath, args, {
      cwd: dir,
      env: {
        ...process.env,
        MATRIX_ONLY: only,
        MATRIX_CONCURRENCY: '2',
        TEMPORAL_CLI_PATH: cli,
        TEMPORAL_ADDRESS: '',
        // A mutant fails its cells, so the matrix keeps their histories: inside the copy, removed with it.
        OPENWORKER_HISTORY_DIR: join(dir, 'histories'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // its own process group, so a stuck run is killed with everything it started
    });
    let out = '';
    proc.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    proc.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    const timer = setTimeout(() => process.kill(-proc.pid!, 'SIGKILL'), PER_RUN_MS);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      // mocha prints "1) <describe>" and then the test title on the next line.
      const failing = /^\s+1\) .*\n\s+(.*):$/m.exec(out.split(/\d+ failing/)[1] ?? '')?.[1]?.trim();
      const why = /^\s+(?:AssertionError[^:]*|Error|InvariantViolation): (.*)$/m.exec(out)?.[1];
      const counts = /(\d+) passing/.exec(out)?.[0] ?? '';
      resolve({
        passed: code === 0,
        summary: code === 0 ? counts : `${failing ?? `exit ${code}`}${why ? ` — ${why.slice(0, 160)}` : ''}`,
      });
    });
  });
}

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const mutants = MUTANTS.filter((m) => !quick || m.quick);
  const cli = (await resolveTemporalCli(process.env)).path;
  const started = Date.now();
  const union = [...new Set(mutants.map((m) => m.cells))].map((c) => `(${c})`).join('|');

  const control = copyBuild();
  try {
    const r = await runCells(control, union, cli);
    console.log(
      `control (unchanged build, ${mutants.length} mutants' cells): ${r.passed ? 'passed' : 'FAILED'} ${r.summary}`,
    );
    if (!r.passed) {
      console.error('the control run must pass for mutant kills to mean anything');
      process.exitCode = 1;
      return;
    }
  } finally {
    rmSync(control, { recursive: true, force: true });
  }

  let killed = 0;
  for (const m of mutants) {
    const dir = copyBuild();
    try {
      mutate(dir, m);
      const r = await runCells(dir, m.cells, cli);
      if (!r.passed) killed++;
      console.log(`${r.passed ? 'SURVIVED' : 'killed  '} ${m.name}: ${m.what}\n         ${r.summary}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  console.log(`mutants: ${killed}/${mutants.length} killed in ${Math.round((Date.now() - started) / 1000)} s`);
  if (killed !== mutants.length) process.exitCode = 1;
}

if (require.main === module) {
  main().catch((err: Error) => {
    console.error(err.message);
    process.exitCode = 1;
  });
}
