import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool } from '../tool';
import type { McpServerConfig } from './config';
import type { McpTool } from './servers';
import { connectMcp, listMcpTools } from './servers';
import { toolFromMcp } from './tools';

// One connection per MCP server per worker, shared by every call (MCP multiplexes requests). A
// connection that closes (the server exited, its HTTP session ended) is opened again by the next
// call, which also lists the tools again; so does the server's "tools changed" notification.

export interface McpToolSet {
  /** Every listed tool of every server, with its policy; denied ones included, for the audit. */
  listed(): McpTool[];
  /** The registry tools (denied ones left out). */
  tools(): Tool[];
  /** The server's client, connecting (again) if needed. */
  client(server: string): Promise<Client>;
  /** Called with every registry tool when a server's list changed; the worker swaps them into its registry. */
  onChange(listener: (tools: Tool[]) => void): void;
  close(): Promise<void>;
}

export interface McpOptions {
  /** One line for the worker's log. */
  log?: (line: string) => void;
}

interface Connection {
  config: McpServerConfig;
  client?: Promise<Client>;
  listed: McpTool[];
  tools: Tool[];
}

/** Connects to every server and lists its tools; a server that does not start fails the worker's start. */
export async function startMcp(configs: readonly McpServerConfig[], opts: McpOptions = {}): Promise<McpToolSet> {
  const log = opts.log ?? (() => undefined);
  const conns = new Map<string, Connection>(configs.map((c) => [c.name, { config: c, listed: [], tools: [] }]));
  let closing = false;
  let listener: ((tools: Tool[]) => void) | undefined;

  const client = (server: string): Promise<Client> => {
    const conn = conns.get(server);
    if (!conn) return Promise.reject(new Error(`no MCP server named '${server}' on this worker`));
    if (closing) return Promise.reject(new Error('the worker is shutting down'));
    if (!conn.client) {
      const opening: Promise<Client> = open(conn, () => conn.client === opening);
      conn.client = opening;
      opening.catch(() => {
        if (conn.client === opening) conn.client = undefined;
      });
    }
    return conn.client;
  };

  const relist = async (conn: Connection, c: Client): Promise<void> => {
    conn.listed = await listMcpTools(conn.config, c);
    conn.tools = conn.listed.flatMap((t) => toolFromMcpSafely(t) ?? []);
  };

  const toolFromMcpSafely = (t: McpTool): Tool | undefined => {
    try {
      return toolFromMcp(t, client);
    } catch (err) {
      log(`mcp ${t.server}: tool '${t.tool}' left out: ${(err as Error).message}`);
      return undefined;
    }
  };

  const changed = (): void => listener?.([...conns.values()].flatMap((c) => c.tools));

  /** `current()`: this is still the server's connection (a newer one may replace it after a close). */
  const open = async (conn: Connection, current: () => boolean): Promise<Client> => {
    const name = conn.config.name;
    let c: Client | undefined;
    const p = connectMcp(conn.config, {
      onToolsChanged: () => {
        if (!c || !current()) return;
        relist(conn, c).then(changed, (err: Error) =>
          log(`mcp ${name}: could not list its tools again: ${err.message}`),
        );
      },
      onClose: () => {
        if (!current()) return;
        conn.client = undefined;
        if (!closing) log(`mcp ${name}: connection closed; the next call opens it again`);
      },
    });
    try {
      c = await p;
      await relist(conn, c);
    } catch (err) {
      await c?.close().catch(() => undefined);
      throw err;
    }
    changed();
    return c;
  };

  try {
    // One by one: a failure names its server, and nothing is left open behind it.
    for (const conn of conns.values()) await client(conn.config.name);
  } catch (err) {
    closing = true;
    await Promise.all([...conns.values()].map((c) => c.client?.then((x) => x.close()).catch(() => undefined)));
    throw err;
  }
  return {
    listed: () => [...conns.values()].flatMap((c) => c.listed),
    tools: () => [...conns.values()].flatMap((c) => c.tools),
    client,
    onChange: (fn) => (listener = fn),
    async close() {
      closing = true;
      await Promise.all([...conns.values()].map((c) => c.client?.then((x) => x.close()).catch(() => undefined)));
    },
  };
}
