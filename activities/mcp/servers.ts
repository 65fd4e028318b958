import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { McpServerConfig } from './config';
import { policyFor, type McpAnnotations, type McpToolPolicy } from './policy';

// Talking to MCP servers with the official client: connect over stdio or Streamable HTTP, list
// the tools and decide each one's policy. (Running a call as a durable tool activity comes next.)

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

export async function connectMcp(server: McpServerConfig, name = 'openworker-temporal'): Promise<Client> {
  const client = new Client({ name, version: '0.1.0' });
  const transport =
    server.transport === 'stdio'
      ? new StdioClientTransport({
          command: server.command,
          args: server.args ?? [],
          ...(server.env ? { env: { ...(process.env as Record<string, string>), ...server.env } } : {}),
          stderr: 'pipe',
        })
      : new StreamableHTTPClientTransport(new URL(server.url), {
          requestInit: { headers: server.headers ?? {} },
        });
  try {
    await client.connect(transport);
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
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
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
