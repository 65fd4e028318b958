import { parseMcpConfig } from '../../activities/mcp/config';
import { startMcp } from '../../activities/mcp/pool';
import type { ToolContext } from '../../activities/tool';

// The client that @modelcontextprotocol/conformance starts for each client scenario
// (test/mcpConformance.test.ts): `node dist/test/support/conformanceClient.js <server-url>`, the
// scenario's name in MCP_CONFORMANCE_SCENARIO. It goes through the worker's own MCP code, not the bare
// SDK: the config parser, the connection pool (connect, initialize, every tools/list page), and each
// listed tool's registry `execute` (argument check, tools/call with the execution ID in `_meta`, the
// outcome mapping). It prints one JSON line per call and exits 1 if anything threw.

/** Arguments per scenario and tool; any other tool is called with `{}`. */
const ARGS: Record<string, Record<string, Record<string, unknown>>> = {
  tools_call: { add_numbers: { a: 2, b: 3 } },
};

const SERVER = 'conformance';

function context(executionId: string): ToolContext {
  return {
    executionId,
    attempt: 1,
    sessionId: 'conformance',
    turn: 1,
    toolCallId: executionId,
    signal: new AbortController().signal,
    heartbeat: () => undefined,
  };
}

async function main(): Promise<number> {
  const url = process.argv[2];
  const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
  if (!url) throw new Error('usage: conformanceClient <server-url>');
  const config = parseMcpConfig({ servers: { [SERVER]: { url } } }, 'conformance', process.env);
  const set = await startMcp(config, { log: (line) => console.error(line) });
  let failed = false;
  try {
    for (const listed of set.listed()) {
      const tool = set.tools().find((t) => t.name === listed.policy.name);
      if (!tool) continue;
      const args = ARGS[scenario]?.[listed.tool] ?? {};
      const executionId = `owx-conformance-${listed.tool}`;
      const input = tool.input.safeParse(args);
      try {
        if (!input.success) throw new Error(`invalid arguments: ${input.error.message}`);
        const result = await tool.execute(input.data, context(executionId));
        console.log(JSON.stringify({ tool: listed.tool, executionId, result }));
      } catch (err) {
        failed = true;
        const e = err as Error;
        console.log(JSON.stringify({ tool: listed.tool, executionId, error: `${e.name}: ${e.message}` }));
      }
    }
  } finally {
    await set.close();
  }
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`conformance client: ${err.message}`);
    process.exit(1);
  },
);
