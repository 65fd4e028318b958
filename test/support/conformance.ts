import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { ROOT } from './processes';

// Runs the client scenarios of @modelcontextprotocol/conformance against our MCP client
// (test/support/conformanceClient.ts) and reads what each scenario's checks say.
// test/mcpConformance.test.ts holds the results against test/fixtures/mcp-conformance-expected-failures.json;
// `node dist/test/support/conformance.js` prints the table that docs/mcp.md shows.

const PACKAGE = join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance');
const SUITE_CLI = join(PACKAGE, 'dist', 'index.js');
const CLIENT_ENTRY = join(__dirname, 'conformanceClient.js');
const EXPECTED_FAILURES = join(ROOT, 'test', 'fixtures', 'mcp-conformance-expected-failures.json');

/**
 * The suite's one bundle imports `globSync` from `fs` (Node 22) for its tier-check command, which
 * client runs never use; on Node 20 the import alone stops it loading. This loader hook gives that
 * bundle, and only it, an `fs` with a stand-in `globSync` that throws if it is ever called.
 */
const FS_SHIM =
  "import fs from 'node:fs'; export * from 'node:fs'; export default fs;" +
  " export const globSync = fs.globSync ?? (() => { throw new Error('fs.globSync needs Node 22'); });";
const HOOKS =
  'export async function resolve(s, c, next) {' +
  " if ((s === 'fs' || s === 'node:fs') && c.parentURL && c.parentURL.includes('/@modelcontextprotocol/conformance/'))" +
  ` return { url: 'data:text/javascript,' + encodeURIComponent(${JSON.stringify(FS_SHIM)}), shortCircuit: true };` +
  ' return next(s, c); }';
const REGISTER = `import { register } from 'node:module'; register(${JSON.stringify('data:text/javascript,' + encodeURIComponent(HOOKS))});`;
const NODE_FLAGS = 'globSync' in fs ? [] : ['--import', `data:text/javascript,${encodeURIComponent(REGISTER)}`];

export interface Check {
  id: string;
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | string;
  errorMessage?: string;
  details?: unknown;
}

export interface ScenarioResult {
  scenario: string;
  checks: Check[];
  /** What our client printed: one JSON line per tool call. */
  stdout: string;
  stderr: string;
}

/**
 * The suite's own rule (its `--expected-failures`) fails a scenario on any FAILURE or WARNING, and
 * passes one with no checks at all: `initialize` "passes" when the client dies before it connects.
 * Ours also wants one SUCCESS. And it lets one warning through, the one check timed by the wall
 * clock: sse-retry's reconnect 200-500 ms late ("acceptable but may indicate network delays").
 */
const TIMING_WARNINGS = new Set(['client-sse-retry-timing']);

export function failedChecks(checks: readonly Check[]): Check[] {
  return checks.filter((c) => c.status === 'FAILURE' || (c.status === 'WARNING' && !TIMING_WARNINGS.has(c.id)));
}

export function passed(checks: readonly Check[]): boolean {
  return failedChecks(checks).length === 0 && checks.some((c) => c.status === 'SUCCESS');
}

/**
 * Scenarios measured again on their own after the others, and that run counts: sse-retry times a
 * 500 ms reconnect, which 25 clients starting beside it on 2 cores can delay past its window.
 */
const ALONE = ['sse-retry'];

/** Scenario name → why it is expected to fail. */
export function expectedFailures(): Record<string, string> {
  return JSON.parse(readFileSync(EXPECTED_FAILURES, 'utf8')) as Record<string, string>;
}

function checksFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return checksFiles(p);
    return name === 'checks.json' ? [p] : [];
  });
}

/** One run of the suite's CLI (`selection`: `--suite all` or `--scenario x`), in its own process group. */
async function runSuite(
  selection: string[],
  out: string,
  opts: { clientTimeoutMs: number; totalMs: number },
): Promise<{ code: number | null; log: string }> {
  const what = selection.join(' ');
  const args = [
    ...NODE_FLAGS,
    SUITE_CLI,
    'client',
    // The suite splits this on spaces and runs it in a shell, with the server's URL appended.
    '--command',
    `${process.execPath} ${CLIENT_ENTRY}`,
    ...selection,
    '--timeout',
    String(opts.clientTimeoutMs),
    '-o',
    out,
  ];
  const child = spawn(process.execPath, args, { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr.on('data', (d: Buffer) => (log += d.toString()));
  const killGroup = (): void => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  let timedOut = false;
  const timer = setTimeout(() => ((timedOut = true), killGroup()), opts.totalMs);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(timer);
  killGroup(); // a client the suite left behind
  // Partial results would read as scenarios that failed; say what happened instead.
  if (timedOut)
    throw new Error(`the conformance suite (${what}) did not end within ${opts.totalMs} ms:\n${log.slice(-2000)}`);
  return { code, log };
}

/** What each scenario's folder under `out` holds: `<scenario>-<ISO time, : and . as ->/checks.json`. */
function readResults(out: string): ScenarioResult[] {
  return checksFiles(out).map((file) => {
    const dir = join(file, '..');
    const read = (name: string): string => readFileSync(join(dir, name), 'utf8');
    return {
      // auth/… scenarios nest a folder.
      scenario: relative(out, dir).replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, ''),
      checks: JSON.parse(read('checks.json')) as Check[],
      stdout: read('stdout.txt'),
      stderr: read('stderr.txt'),
    };
  });
}

/**
 * Every client scenario of the suite (`--suite all`, which runs them side by side), each with its own
 * scenario server on localhost and one run of our client; then the ALONE ones again. `summary`: the
 * names the suite reports, one that left no checks (it did not start) included. Bounded: a client is
 * stopped after `clientTimeoutMs`, each run of the suite (its process group) after `totalMs`.
 */
export async function runClientScenarios(
  opts: { clientTimeoutMs?: number; totalMs?: number } = {},
): Promise<{ summary: string[]; results: ScenarioResult[] }> {
  const bounds = { clientTimeoutMs: opts.clientTimeoutMs ?? 30_000, totalMs: opts.totalMs ?? 60_000 };
  const all = mkdtempSync(join(tmpdir(), 'mcp-conformance-'));
  const alone = mkdtempSync(join(tmpdir(), 'mcp-conformance-alone-'));
  try {
    const { code, log } = await runSuite(['--suite', 'all'], all, bounds);
    const summary = [...log.matchAll(/^[✓✗] (\S+):/gmu)].map((m) => m[1]!);
    const results = readResults(all);
    if (results.length === 0)
      throw new Error(`the conformance suite ran no scenario (exit ${code}):\n${log.slice(-2000)}`);
    for (const name of ALONE) await runSuite(['--scenario', name], alone, bounds);
    const again = readResults(alone);
    return { summary, results: results.map((r) => again.find((a) => a.scenario === r.scenario) ?? r) };
  } finally {
    rmSync(all, { recursive: true, force: true });
    rmSync(alone, { recursive: true, force: true });
  }
}

/** The pass/fail table of docs/mcp.md. */
function table(results: ScenarioResult[]): string {
  const expected = expectedFailures();
  const rows = [...results]
    .sort((a, b) => a.scenario.localeCompare(b.scenario))
    .map((r) => {
      // The reason's first clause; the fixture has the rest.
      const why =
        expected[r.scenario]?.split(':')[0] ??
        failedChecks(r.checks)
          .map((c) => c.id)
          .join(', ');
      return `| \`${r.scenario}\` | ${passed(r.checks) ? 'pass' : 'fail'} | ${why} |`;
    });
  return ['| scenario | result | why it fails |', '|---|---|---|', ...rows].join('\n');
}

if (require.main === module) {
  const started = Date.now();
  runClientScenarios().then(
    ({ results }) => {
      console.log(table(results));
      console.log(`\n${results.length} scenarios in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    },
    (err: Error) => {
      console.error(err.message);
      process.exit(1);
    },
  );
}
