import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Tool } from '../tool';
import type { McpServerConfig } from './config';
import type { McpTool } from './servers';
import { connectMcp, listMcpTools } from './servers';
import type { McpLease } from './tools';
import { toolFromMcp } from './tools';

// One connection per MCP server per worker, lent to every call (MCP multiplexes requests). A
// connection that closes or breaks is retired: the next call opens a new one, which also lists the
// tools again, and the old one is closed once its last call has ended. A "tools changed"
// notification lists them again too; the newest listing wins.

export interface McpToolSet {
  /** Every listed tool of every server, with its policy; denied ones included, for the audit. */
  listed(): McpTool[];
  /** The registry tools (denied ones left out). */
  tools(): Tool[];
  /** Called with every registry tool when a server's list changed; the worker swaps them into its registry. */
  onChange(listener: (tools: Tool[]) => void): void;
  close(): Promise<void>;
}

interface Connection {
  client: Promise<Client>;
  /** Calls holding it. */
  calls: number;
  retired: boolean;
}

interface ServerPool {
  lease(): Promise<McpLease>;
  listed: McpTool[];
  tools: Tool[];
  close(): Promise<void>;
}

type Log = (line: string) => void;

async function closeClient(conn: Connection): Promise<void> {
  const client = await conn.client.catch(() => undefined);
  const transport = client?.transport as { terminateSession?: () => Promise<void> } | undefined;
  // An HTTP server keeps a session until told; a short bound, since it may be the thing that is down.
  if (transport?.terminateSession)
    await Promise.race([transport.terminateSession(), new Promise((r) => setTimeout(r, 2_000).unref())]).catch(
      () => undefined,
    );
  await client?.close().catch(() => undefined);
}

function serverPool(config: McpServerConfig, log: Log, changed: () => void): ServerPool {
  const name = config.name;
  let current: Connection | undefined;
  const open = new Set<Connection>();
  let listings = 0;
  let closing = false;

  const retire = (conn: Connection): void => {
    conn.retired = true;
    if (current === conn) current = undefined;
    if (conn.calls === 0 && open.delete(conn)) void closeClient(conn);
  };

  const relist = async (client: Client): Promise<void> => {
    const mine = ++listings;
    const listed = await listMcpTools(config, client);
    if (mine !== listings) return; // a newer listing started meanwhile: it wins
    pool.listed = listed;
    pool.tools = listed.flatMap((t) => {
      try {
        return toolFromMcp(t, () => pool.lease()) ?? [];
      } catch (err) {
        log(`mcp ${name}: tool '${t.tool}' left out: ${(err as Error).message}`);
        return [];
      }
    });
    changed();
  };

  const connect = (): Connection => {
    const conn: Connection = { calls: 0, retired: false, client: undefined as unknown as Promise<Client> };
    conn.client = (async () => {
      const client = await connectMcp(config, {
        log,
        onToolsChanged: () => {
          if (!conn.retired)
            conn.client
              .then(relist)
              .catch((err: Error) => log(`mcp ${name}: could not list its tools again: ${err.message}`));
        },
        onClose: () => {
          if (!closing && !conn.retired) log(`mcp ${name}: connection closed; the next call opens it again`);
          retire(conn);
        },
      });
      try {
        await relist(client);
      } catch (err) {
        await client.close().catch(() => undefined);
        throw err;
      }
      return client;
    })();
    conn.client.catch(() => retire(conn));
    open.add(conn);
    return conn;
  };

  const pool: ServerPool = {
    listed: [],
    tools: [],
    async lease() {
      // Twice at most: the connection may close between its opening and this call taking it.
      for (let i = 0; i < 2; i++) {
        if (closing) throw new Error('the worker is shutting down');
        const conn = (current ??= connect());
        const client = await conn.client;
        if (conn.retired) continue;
        conn.calls++;
        let released = false;
        return {
          client,
          release(broken = false) {
            if (released) return;
            released = true;
            conn.calls--;
            if (broken) log(`mcp ${name}: connection broken; the next call opens another`);
            if (broken || conn.retired) retire(conn);
          },
        };
      }
      throw new Error(`MCP server '${name}' closed the connection as it opened`);
    },
    async close() {
      closing = true;
      const all = [...open];
      open.clear();
      current = undefined;
      await Promise.all(all.map(closeClient));
    },
  };
  return pool;
}

/** Connects to every server and lists its tools; a server that does not start fails the worker's start. */
export async function startMcp(configs: readonly McpServerConfig[], opts: { log?: Log } = {}): Promise<McpToolSet> {
  const log = opts.log ?? (() => undefined);
  let listener: ((tools: Tool[]) => void) | undefined;
  const pools: ServerPool[] = [];
  const tools = (): Tool[] => pools.flatMap((p) => p.tools);
  for (const config of configs) pools.push(serverPool(config, log, () => listener?.(tools())));
  const closeAll = async (): Promise<void> => void (await Promise.all(pools.map((p) => p.close())));
  try {
    // One by one, so a failure names its server; the lease is returned at once.
    for (const p of pools) (await p.lease()).release();
  } catch (err) {
    await closeAll();
    throw err;
  }
  return {
    listed: () => pools.flatMap((p) => p.listed),
    tools,
    onChange: (fn) => (listener = fn),
    close: closeAll,
  };
}
