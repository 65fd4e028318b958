import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Tool, ToolContext } from '../tool';
import { traceMeta } from '../tracing';
import { ToolFailure, UnknownOutcome, defineTool } from '../tool';
import type { CallFailure } from './outcomes';
import { classifyCallError, errorResultRan, textOf, valueOf } from './outcomes';
import { inputFromJsonSchema } from './schema';
import type { McpTool } from './servers';

// An MCP tool as a tool of the registry: the same activity, execution ID, dispatch marker and
// ledger as a defineTool tool. What the server answers decides the outcome (activities/mcp/outcomes.ts):
//   a result → succeeded; isError → failed (the model reads it); a refusal → failed;
//   not sent → failed, or retried where that is safe; anything else → outcome unknown.

/** The request `_meta` key that carries the execution ID: a server that deduplicates uses it as the key. */
export const EXECUTION_ID_META = 'openworker/executionId';
/** The attempt of this execution (1-based), next to the execution ID. */
export const ATTEMPT_META = 'openworker/attempt';

const DEFAULT_TIMEOUT_MS = 120_000;

/** A connection lent to one call; `release({ broken: true })` retires it, so the next call opens another. */
export interface McpLease {
  client: Client;
  release(opts?: { broken?: boolean }): void;
}
/** Lends the tool's server connection (activities/mcp/pool.ts). */
export type McpConnections = () => Promise<McpLease>;

type Sent = { result: CallToolResult } | { failure: CallFailure; message: string };

/** One `tools/call` on a lent connection; a failure comes back classified, never thrown. */
async function send(lease: McpLease, t: McpTool, args: Record<string, unknown>, ctx: ToolContext): Promise<Sent> {
  // A signal of our own, detached when the call ends: the SDK never removes its listener, and a
  // later abort would send notifications/cancelled for a call that already finished.
  const stop = new AbortController();
  const onAbort = (): void => stop.abort(ctx.signal.reason);
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  let broken = false;
  try {
    const result = await lease.client.request(
      {
        method: 'tools/call',
        params: {
          name: t.tool,
          arguments: args,
          // The trace's W3C context (traceparent, tracestate) when the worker traces (docs/observability.md).
          _meta: { ...traceMeta(), [EXECUTION_ID_META]: ctx.executionId, [ATTEMPT_META]: ctx.attempt },
        },
      },
      CallToolResultSchema,
      {
        // Aborting sends MCP's notifications/cancelled (a read cancelled with its turn, a shutdown).
        signal: stop.signal,
        timeout: t.policy.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        onprogress: (p) => ctx.heartbeat({ progress: p.progress, total: p.total }),
      },
    );
    return { result };
  } catch (err) {
    const failure = classifyCallError(err, stop.signal.aborted);
    broken = failure.broken;
    const why = (err as Error)?.message?.split('\n')[0] ?? String(err);
    return { failure, message: `MCP server '${t.server}', tool '${t.tool}': ${why}` };
  } finally {
    ctx.signal.removeEventListener('abort', onAbort);
    lease.release({ broken });
  }
}

/** Sends one `tools/call` and maps the answer onto the tool outcomes (above). */
export async function callMcpTool(
  connections: McpConnections,
  t: McpTool,
  args: Record<string, unknown>,
  ctx: ToolContext,
): Promise<unknown> {
  const { server, tool, policy } = t;
  // Safe to run again: Temporal retries a read or an idempotent call; the others end as failed.
  const notSent = (why: string): Error =>
    policy.effect === 'read' || policy.recovery === 'idempotent'
      ? new Error(`not sent: ${why}`)
      : new ToolFailure(`not sent: ${why}`);
  const attempt = async (): Promise<Sent> => {
    let lease: McpLease;
    try {
      lease = await connections();
    } catch (err) {
      throw notSent((err as Error).message);
    }
    if (ctx.signal.aborted) {
      lease.release();
      throw notSent('stopped before the request was sent');
    }
    return send(lease, t, args, ctx);
  };
  let sent = await attempt();
  // A request that provably never reached the server (its connection had closed, the HTTP server
  // restarted and forgot the session) is sent once more, on a new connection.
  if ('failure' in sent && sent.failure.outcome === 'not_sent') sent = await attempt();
  if ('failure' in sent) {
    const { failure, message } = sent;
    if (failure.outcome === 'refused') throw new ToolFailure(message);
    if (failure.outcome === 'not_sent') throw notSent(message);
    throw new Error(message);
  }
  const { result } = sent;
  if (result.isError) {
    const text = textOf(result) || `tool '${tool}' reported an error`;
    if (policy.errorResult === 'unknown' || errorResultRan(result))
      throw new UnknownOutcome(`MCP server '${server}' answered an error after the tool ran: ${text}`);
    throw new ToolFailure(text);
  }
  return valueOf(result);
}

/** The registry tool for a listed MCP tool; undefined for a denied one. */
export function toolFromMcp(t: McpTool, connections: McpConnections): Tool | undefined {
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
    execute: (input, ctx) => callMcpTool(connections, t, input, ctx),
  });
}
