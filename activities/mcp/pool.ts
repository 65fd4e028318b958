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
// notification lists them again too; the newest listing wins, and one the worker refuses (a name
// clash) leaves the last accepted one in place.

export interface McpToolSet {
  /** Every listed tool of every server, with its policy; denied ones included, for the audit. */
  listed(): McpTool[];
  /** The registry tools (denied ones and ones whose schema cannot be used left out). */
  tools(): Tool[];
  /**
   * Called with every registry tool when a server's list changed; returns whether the worker took
   * them (a clash is refused, and the server keeps its last accepted list).
   */
  onChange(listener: (tools: Tool[]) => boolean): void;
  close(): Promise<void>;
}

type Log = (line: string) => void;

interface McpConnection {
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

async function closeClient(conn: McpConnection): Promise<void> {
  const client = await conn.client.catch(() => undefined);
  const transport = client?.transport as { terminateSession?: () => Promise<void> } | undefined;
  // An HTTP server keeps a session until told; a short bound, since it may be the thing that is down.
  if (transport?.terminateSession)
    await Promise.race([transport.terminateSession(), new Promise((r) => setTimeout(r, 2_000).unref())]).catch(
      () => undefined,
    );
  await client?.close().catch(() => undefined);
}

/** A server's connections and its current tools. `accept` asks the worker to take a new list. */
function serverPool(config: McpServerConfig, log: Log, accept: () => boolean): ServerPool {
  const name = config.name;
  let current: McpConnection | undefined;
  const open = new Set<McpConnection>();
  let listings = 0;
  let everListed = false;
  let closing = false;

  const retire = (conn: McpConnection): void => {
    conn.retired = true;
    if (current === conn) current = undefined;
    if (conn.calls === 0 && open.delete(conn)) void closeClient(conn);
  };

  const toolsOf = (listed: McpTool[]): Tool[] =>
    listed.flatMap((t) => {
      try {
        return toolFromMcp(t, () => pool.lease()) ?? [];
      } catch (err) {
        log(`mcp ${name}: tool '${t.tool}' left out: ${(err as Error).message}`);
        return [];
      }
    });

  const relist = async (client: Client): Promise<void> => {
    const mine = ++listings;
    const listed = await listMcpTools(config, client);
    if (mine !== listings) return; // a newer listing started meanwhile: it wins
    const before = { listed: pool.listed, tools: pool.tools };
    Object.assign(pool, { listed, tools: toolsOf(listed) });
    if (accept()) everListed = true;
    else Object.assign(pool, before);
  };

  const openConnection = (): McpConnection => {
    const first = !everListed;
    let listedHere = false; // a notice before this connection's first listing has nothing to add
    const connecting = connectMcp(config, {
      log,
      onToolsChanged: () => {
        if (!listedHere || conn.retired) return;
        void connecting
          .then(relist)
          .catch((err: Error) => log(`mcp ${name}: could not list its tools again: ${err.message}`));
      },
      onClose: () => {
        // Only one that served: a connection that fails as it opens closes too, and its error says why.
        if (listedHere && !closing && !conn.retired)
          log(`mcp ${name}: connection closed; the next call opens it again`);
        retire(conn);
      },
    });
    const listing = connecting.then(async (client) => {
      try {
        await relist(client);
      } catch (err) {
        // At start a server that cannot list stops the worker; later the tools it had stay.
        if (first) {
          await client.close().catch(() => undefined);
          throw err;
        }
        log(`mcp ${name}: could not list its tools again, the last list stays: ${(err as Error).message}`);
      }
      listedHere = true;
      return client;
    });
    const conn: McpConnection = { calls: 0, retired: false, client: listing };
    listing.catch(() => retire(conn));
    open.add(conn);
    return conn;
  };

  const pool: ServerPool = {
    listed: [],
    tools: [],
    async lease() {
      // Twice at most: the connection may close between its opening and this call taking it.
      for (let i = 0; i < 2; i++) {
        if (closing) break;
        const conn = (current ??= openConnection());
        const client = await conn.client;
        if (conn.retired || closing) continue;
        conn.calls++;
        let released = false;
        return {
          client,
          release({ broken = false } = {}) {
            if (released) return;
            released = true;
            conn.calls--;
            if (broken) log(`mcp ${name}: connection broken; the next call opens another`);
            if (broken || conn.retired) retire(conn);
          },
        };
      }
      throw new Error(
        closing ? 'the worker is shutting down' : `MCP server '${name}' closed the connection as it opened`,
      );
    },
    async close() {
      closing = true;
      const all = [...open];
      open.clear();
      current = undefined;
      for (const conn of all) conn.retired = true;
      await Promise.all(all.map(closeClient));
    },
  };
  return pool;
}

/** Connects to every server and lists its tools; a server that does not start fails the worker's start. */
export async function startMcp(configs: readonly McpServerConfig[], opts: { log?: Log } = {}): Promise<McpToolSet> {
  const log = opts.log ?? (() => undefined);
  let listener: ((tools: Tool[]) => boolean) | undefined;
  const pools: ServerPool[] = [];
  const tools = (): Tool[] => pools.flatMap((p) => p.tools);
  for (const config of configs) pools.push(serverPool(config, log, () => listener?.(tools()) ?? true));
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
