import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseMcpConfig } from '../activities/mcp/config';
import { startMcp } from '../activities/mcp/pool';
import { inputFromJsonSchema } from '../activities/mcp/schema';
import type { ToolContext } from '../activities/tool';

// npm run bench:mcp — what an MCP server adds to a tool call, apart from Temporal: starting and
// listing two stdio servers (server-filesystem and the test recorder), compiling a tool's schema,
// and one tools/call round trip through the pool, the schema check and the outcome mapping. The durable part (history per call)
// is the same as any tool's: see docs/performance.md.

const ROOT = join(__dirname, '..', '..');
const CALLS = Number(process.env.BENCH_MCP_CALLS ?? 1000);

const pct = (sorted: number[], p: number): string =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!.toFixed(2);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'openworker-bench-mcp-'));
  const configs = parseMcpConfig(
    {
      servers: {
        rec: {
          command: process.execPath,
          args: [join(ROOT, 'dist', 'test', 'support', 'mcpRecorder.js')],
          env: { RECORDER_LOG: join(dir, 'log.jsonl') },
        },
        files: { command: process.execPath, args: [join(ROOT, 'node_modules', '.bin', 'mcp-server-filesystem'), dir] },
      },
    },
    'bench',
    process.env,
  );
  const started = performance.now();
  const set = await startMcp(configs);
  const startMs = performance.now() - started;
  const note = set.tools().find((t) => t.name === 'rec__note')!;
  const schemas = set.listed().map((t) => t.inputSchema);
  const compiling = performance.now();
  for (let i = 0; i < 10; i++) for (const s of schemas) inputFromJsonSchema(s);
  const compileMs = (performance.now() - compiling) / (10 * schemas.length);
  const ctx = (i: number): ToolContext => ({
    executionId: `owx-${i}`,
    attempt: 1,
    sessionId: 'bench',
    turn: 1,
    toolCallId: `c${i}`,
    signal: new AbortController().signal,
    heartbeat: () => undefined,
  });
  const input = note.input.parse({ text: 'x' });
  for (let i = 0; i < 100; i++) await note.execute(input, ctx(i)); // warm up
  const ms: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const t = performance.now();
    note.input.parse({ text: 'x' });
    await note.execute(input, ctx(i));
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  await set.close();
  rmSync(dir, { recursive: true, force: true });
  console.log(
    JSON.stringify({
      startAndListMs: Math.round(startMs),
      tools: set.tools().length,
      schemaCompileMs: compileMs.toFixed(2),
      calls: CALLS,
      callMs: { p50: pct(ms, 50), p99: pct(ms, 99) },
    }),
  );
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
