import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Tool, ToolContext } from '../tool';
import { ToolFailure, defineTool } from '../tool';
import { inputFromJsonSchema } from './schema';
import type { McpTool } from './servers';

// An MCP tool as a tool of the registry: the same activity, execution ID, dispatch marker and
// ledger as a defineTool tool. What the server answers decides the outcome:
//   a result                              → succeeded
//   isError: true                         → a definite failure the model reads
//   a JSON-RPC refusal (no such tool, invalid params) → the same: the server did not run it
//   no connection before the request      → not sent (a definite failure, or retried where safe)
//   anything after the request was sent   → outcome unknown: the recovery policy decides

/** The request `_meta` key that carries the execution ID: a server that deduplicates uses it as the key. */
export const EXECUTION_ID_META = 'openworker/executionId';
/** The attempt of this execution (1-based), next to the execution ID. */
export const ATTEMPT_META = 'openworker/attempt';

const DEFAULT_TIMEOUT_MS = 120_000;
const TEXT_CAP = 4_000;

/** Answers from the server that mean it did not run the tool. */
const REFUSALS = new Set<number>([ErrorCode.MethodNotFound, ErrorCode.InvalidParams]);

export type McpClientSource = (server: string) => Promise<Client>;

/** The text blocks of a result, joined; what the model reads of an error. */
export function textOf(result: CallToolResult): string {
  return (result.content ?? [])
    .flatMap((c) => (c.type === 'text' ? [c.text] : []))
    .join('\n')
    .slice(0, TEXT_CAP);
}

/** What the model sees of a successful call: structured content, else the text, else the blocks. */
export function valueOf(result: CallToolResult): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const content = result.content ?? [];
  return content.every((c) => c.type === 'text') ? content.map((c) => c.text).join('\n') : content;
}

/** Sends one `tools/call` and maps the answer onto the tool outcomes (above). */
export async function callMcpTool(
  source: McpClientSource,
  t: McpTool,
  args: Record<string, unknown>,
  ctx: ToolContext,
): Promise<unknown> {
  const { server, tool, policy } = t;
  const retriedByTemporal = policy.effect === 'read' || policy.recovery === 'idempotent';
  let client: Client;
  try {
    client = await source(server);
  } catch (err) {
    const why = `not sent: ${(err as Error).message}`;
    // Safe to run again: Temporal retries a read or an idempotent call; the others end here.
    throw retriedByTemporal ? new Error(why) : new ToolFailure(why);
  }
  let result: CallToolResult;
  try {
    // request(), not callTool(): callTool's own output checks throw after the server applied the call,
    // as errors that look like refusals.
    result = await client.request(
      {
        method: 'tools/call',
        params: {
          name: tool,
          arguments: args,
          _meta: { [EXECUTION_ID_META]: ctx.executionId, [ATTEMPT_META]: ctx.attempt },
        },
      },
      CallToolResultSchema,
      {
        // Aborting sends MCP's notifications/cancelled (a read cancelled with its turn, a shutdown).
        signal: ctx.signal,
        timeout: policy.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        resetTimeoutOnProgress: true,
        onprogress: (p) => ctx.heartbeat({ progress: p.progress, total: p.total }),
      },
    );
  } catch (err) {
    if (err instanceof McpError && REFUSALS.has(err.code))
      throw new ToolFailure(`MCP server '${server}' refused the call: ${err.message}`);
    // Not an answer but a broken transport (a failed POST, a closed pipe): the next call connects again.
    if (!(err instanceof McpError)) await client.close().catch(() => undefined);
    throw new Error(`MCP server '${server}', tool '${tool}': ${(err as Error).message.split('\n')[0]}`);
  }
  if (result.isError) throw new ToolFailure(textOf(result) || `tool '${tool}' reported an error`);
  return valueOf(result);
}

/** The registry tool for a listed MCP tool; undefined for a denied one. */
export function toolFromMcp(t: McpTool, source: McpClientSource): Tool | undefined {
  const { policy } = t;
  if (policy.denied) return undefined;
  const target = policy.target;
  return defineTool({
    name: policy.name,
    description: t.description || t.tool,
    input: inputFromJsonSchema(t.inputSchema),
    jsonSchema: t.inputSchema,
    effect: policy.effect,
    requiresApproval: policy.requiresApproval,
    recovery: policy.recovery,
    ...(policy.local !== undefined ? { local: policy.local } : {}),
    ...(target
      ? {
          target: (input: Record<string, unknown>) =>
            typeof input[target] === 'string' || typeof input[target] === 'number' ? String(input[target]) : undefined,
        }
      : {}),
    timeouts: {
      ...(policy.timeoutMs ? { startToClose: policy.timeoutMs } : {}),
      ...(policy.heartbeatMs ? { heartbeat: policy.heartbeatMs } : {}),
    },
    execute: (input, ctx) => callMcpTool(source, t, input, ctx),
  });
}
