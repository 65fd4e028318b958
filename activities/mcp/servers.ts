import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ListToolsResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { packageVersion } from '../../runtime/stateDir';
import type { McpServerConfig } from './config';
import { policyFor, type McpAnnotations, type McpToolPolicy } from './policy';

// Talking to MCP servers with the official client: connect over stdio or Streamable HTTP, list
// the tools and decide each one's policy. activities/mcp/tools.ts makes them tools of the registry.

export interface McpTool {
  server: string;
  /** The tool's name on its server. */
  tool: string;
  description: string;
  /** The JSON Schema of its arguments, as the server gave it. */
  inputSchema: Record<string, unknown>;
  annotations: McpAnnotations;
  policy: McpToolPolicy;
}

export interface ConnectOptions {
  /** The server said its tool list changed (debounced by the SDK). */
  onToolsChanged?: () => void;
  /** The connection closed (the server exited, the HTTP session ended, or close() was called). */
  onClose?: () => void;
  /** Where a stdio server's stderr goes, a line at a time (default: dropped, but always read). */
  log?: (line: string) => void;
}

/** Bounds starting a server and each tools/list page: a server that hangs there fails the start, not a call. */
export const START_AND_LIST_TIMEOUT_MS = 30_000;
const MAX_PAGES = 100;
const LINE_CAP = 300;
let clientVersion: string | undefined;

function transportFor(server: McpServerConfig, log: (line: string) => void) {
  if (server.transport === 'http')
    return new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: server.headers ?? {} } });
  // Only the variables the config names, over the SDK's safe few (PATH, HOME, USER, …): a server
  // never sees the worker's Temporal key, model keys or payload keys.
  const transport = new StdioClientTransport({
    command: server.command,
    args: server.args ?? [],
    ...(server.env ? { env: server.env } : {}),
    stderr: 'pipe',
  });
  // Read, always: a full pipe would block the server, and an unread one keeps its exit from being seen.
  if (transport.stderr)
    createInterface({ input: transport.stderr as Readable }).on('line', (line) =>
      log(`mcp ${server.name} stderr: ${line.slice(0, LINE_CAP)}`),
    );
  return transport;
}

export async function connectMcp(server: McpServerConfig, opts: ConnectOptions = {}): Promise<Client> {
  const onToolsChanged = opts.onToolsChanged;
  const client = new Client(
    // What the server sees in initialize's clientInfo (the conformance suite checks both are given).
    { name: 'openworker-temporal', version: (clientVersion ??= packageVersion()) },
    onToolsChanged ? { listChanged: { tools: { autoRefresh: false, onChanged: () => onToolsChanged() } } } : {},
  );
  if (opts.onClose) client.onclose = opts.onClose;
  const transport = transportFor(server, opts.log ?? (() => undefined));
  try {
    await client.connect(transport, { timeout: START_AND_LIST_TIMEOUT_MS });
  } catch (err) {
    const how = server.transport === 'stdio' ? `'${server.command}'` : server.url;
    throw new Error(
      `MCP server '${server.name}' (${how}) did not start or answer: ${(err as Error).message.split('\n')[0]}`,
    );
  }
  return client;
}

/** Every tool the server lists (all pages), with its policy; denied tools are kept, marked, for the audit. */
export async function listMcpTools(server: McpServerConfig, client: Client): Promise<McpTool[]> {
  const tools: McpTool[] = [];
  const cursors = new Set<string>();
  let cursor: string | undefined;
  do {
    if (cursors.size >= MAX_PAGES || (cursor && cursors.has(cursor)))
      throw new Error(`MCP server '${server.name}' keeps paging its tool list (${cursors.size} pages)`);
    if (cursor) cursors.add(cursor);
    // request(), not listTools(): listTools also compiles every output schema, and one it cannot
    // compile would fail the whole list.
    const page = await client.request(
      { method: 'tools/list', params: cursor ? { cursor } : {} },
      ListToolsResultSchema,
      { timeout: START_AND_LIST_TIMEOUT_MS },
    );
    for (const t of page.tools) {
      const annotations = (t.annotations ?? {}) as McpAnnotations;
      tools.push({
        server: server.name,
        tool: t.name,
        description: t.description ?? t.title ?? t.name,
        inputSchema: t.inputSchema as Record<string, unknown>,
        annotations,
        policy: policyFor(server, t.name, annotations),
      });
    }
    cursor = page.nextCursor;
  } while (cursor);
  const names = new Map<string, string>();
  for (const t of tools) {
    const other = names.get(t.policy.name);
    if (other)
      throw new Error(
        `MCP server '${server.name}': tools '${other}' and '${t.tool}' both become '${t.policy.name}'; name one of them in the config`,
      );
    names.set(t.policy.name, t.tool);
  }
  return tools;
}

/**
 * One line per server for the worker's start: each tool with the policy it got. `served`: the
 * registry's names, so a tool left out (its schema could not be used) says so.
 */
export function describeMcpTools(tools: readonly McpTool[], served: ReadonlySet<string>): string[] {
  const by = new Map<string, string[]>();
  for (const t of tools) {
    const p = t.policy;
    const how = p.denied
      ? 'denied'
      : !served.has(p.name)
        ? 'left out'
        : p.effect === 'read'
          ? `read${p.requiresApproval ? ', asks' : ''}`
          : `${p.requiresApproval ? 'asks' : 'unasked'}, ${p.recovery}`;
    by.set(t.server, [...(by.get(t.server) ?? []), `${p.denied ? t.tool : p.name} (${how})`]);
  }
  return [...by].map(([server, list]) => `mcp ${server}: ${list.length} tools: ${list.join(', ')}`);
}
