import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import { faultSinks } from '../activities/faults';
import { defaultDataConverter } from '../runtime/dataConverter';
import type { ModelProvider } from '../activities/model';
import { loadModel } from '../activities/models';
import type { ToolRegistry } from '../activities/registry';
import { createRegistry } from '../activities/registry';
import type { ApproversConfig } from '../activities/approvers';
import { approversFromEnv, loadApprovers, withApprovals } from '../activities/approvers';
import type { Limits } from '../activities/limits';
import { limitsFromEnv } from '../activities/limits';
import type { Tool } from '../activities/tool';
import { isTool } from '../activities/tool';
import { builtinTools } from '../activities/tools';
import type { ConnectOptions } from '../runtime/connection';
import { resolveConnectConfig } from '../runtime/connection';
import { workflowBundlerOptions } from './bundle';
import { ensureSearchAttributes } from './searchAttributes';
import { readChoice, readString } from '../runtime/config';
import type { McpServerConfig } from '../activities/mcp/config';
import { loadMcpConfig } from '../activities/mcp/config';
import type { McpToolSet } from '../activities/mcp/pool';
import { startMcp } from '../activities/mcp/pool';

export interface WorkerConfig extends ConnectOptions {
  /** Tools besides the built-in ones. */
  tools?: Tool[];
  /** Modules (`.js`/`.mjs`) whose default export is an array of tools. */
  toolModules?: string[];
  /** Include the built-in tools (send_email). Default true. */
  builtins?: boolean;
  /** A `--model` spec or a provider. Default 'demo'. */
  model?: string | ModelProvider;
  /** Size limits on model output and tool results; each defaults to its OPENWORKER_MAX_* variable, else DEFAULT_LIMITS. */
  limits?: Partial<Limits>;
  /** How long a shutdown waits for running tool calls before cancelling them. Default 60 s. */
  shutdownGraceTime?: string | number;
  identity?: string;
  connection?: NativeConnection;
  /**
   * Turns kept in the worker's cache. Default 100 (`OPENWORKER_MAX_CACHED_WORKFLOWS`): a parked turn
   * costs ~0.2 MiB cached and nothing evicted, and replaying an evicted one on approval adds ~20 ms.
   */
  maxCachedWorkflows?: number;
  /** How long a turn's next task waits for this worker (its sticky queue) before any worker may take it. Default 1 s. */
  stickyQueueTimeout?: string | number;
  /** Approvers' public keys and policy, or the path of an approvers file. Default: $OPENWORKER_APPROVERS. */
  approvers?: ApproversConfig | string;
  /**
   * Poll only workflow tasks or only activity tasks (default both): workflows and tools can be
   * deployed, scaled and restarted apart.
   */
  only?: 'workflows' | 'activities';
  /** Where protected calls record "dispatched" (default: OPENWORKER_DISPATCH_MARKER, else heartbeat). */
  dispatchMarker?: 'heartbeat' | 'update';
  /** MCP servers whose tools this worker serves, or the path of an MCP servers file. Default: $OPENWORKER_MCP. */
  mcp?: McpServerConfig[] | string;
  /** Lines worth an operator's eye (an MCP connection closed, a tool list that changed). Default: stderr. */
  log?: (line: string) => void;
}

export const DEFAULT_MAX_CACHED_WORKFLOWS = 100;

/**
 * How long one workflow activation may run before the SDK stops it. The SDK's 5 s default is a
 * crash, not a guard: a timed-out activation with promises in flight aborts the whole worker
 * process ("async hook stack has become corrupted", nodejs/node#38503, sdk-typescript#939). A flood
 * of signals to one turn ends up in one activation (the server force-fails a task that more than
 * 100 signals arrive during, and the replay after it takes every signal since the last completed
 * task at once); the SDK spends ~0.5-1 ms per signal there, so the 10,000 a server takes per
 * execution need ~5-10 s (node dist/bench/floodRepro.js). 60 s lets them finish; test/unit/workerOptions.test.ts
 * checks the SDK still takes the setting.
 */
export const ISOLATE_EXECUTION_TIMEOUT = '60s';

/** Worker options the SDK honours (worker-options.js) though its WorkerOptions type leaves them out. */
export const UNTYPED_WORKER_OPTIONS: object = { isolateExecutionTimeout: ISOLATE_EXECUTION_TIMEOUT };

export function cacheFromEnv(raw = readString('OPENWORKER_MAX_CACHED_WORKFLOWS')): number {
  if (raw === undefined || raw === '') return DEFAULT_MAX_CACHED_WORKFLOWS;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`OPENWORKER_MAX_CACHED_WORKFLOWS must be a whole number (0 disables the cache), got '${raw}'`);
  return n;
}

export async function loadToolModule(path: string): Promise<Tool[]> {
  const abs = isAbsolute(path) ? path : resolve(process.cwd(), path);
  if (!existsSync(abs)) throw new Error(`--tools ${path}: file not found (${abs})`);
  let mod: { default?: unknown };
  try {
    mod = await import(pathToFileURL(abs).href);
  } catch (err) {
    throw new Error(`--tools ${path}: cannot load the module: ${(err as Error).message}`);
  }
  const tools = mod.default;
  if (!Array.isArray(tools))
    throw new Error(`--tools ${path}: the default export must be an array of tools built with defineTool()`);
  tools.forEach((t, i) => {
    if (!isTool(t))
      throw new Error(`--tools ${path}: item ${i} of the default export is not a tool built with defineTool()`);
  });
  return tools as Tool[];
}

/** Everything a worker needs, resolved and validated before it touches Temporal. */
export async function resolveTools(config: WorkerConfig): Promise<Tool[]> {
  const tools: Tool[] = config.builtins === false ? [] : builtinTools();
  for (const path of config.toolModules ?? []) tools.push(...(await loadToolModule(path)));
  tools.push(...(config.tools ?? []));
  // A module's tool replaces a built-in of the same name; two user tools with one name is an error.
  const builtinNames = new Set(config.builtins === false ? [] : builtinTools().map((t) => t.name));
  const seen = new Map<string, Tool>();
  for (const t of tools) {
    if (seen.has(t.name) && !builtinNames.has(t.name))
      throw new Error(`two tools are named '${t.name}'; tool names must be unique`);
    seen.set(t.name, t);
  }
  return [...seen.values()];
}

/** The MCP servers of `--mcp` or $OPENWORKER_MCP, connected and listed; none when neither is set. */
async function mcpFrom(given: WorkerConfig['mcp'], log: (line: string) => void): Promise<McpToolSet | undefined> {
  const source = given ?? readString('OPENWORKER_MCP');
  if (!source) return undefined;
  const configs = typeof source === 'string' ? loadMcpConfig(source) : source;
  return configs.length ? startMcp(configs, { log }) : undefined;
}

export function workflowSource():
  { workflowBundle: { codePath: string } } | { workflowsPath: string; bundlerOptions: typeof workflowBundlerOptions } {
  const bundle = join(__dirname, '..', 'workflow-bundle.js');
  return existsSync(bundle)
    ? { workflowBundle: { codePath: bundle } }
    : { workflowsPath: require.resolve('../workflows'), bundlerOptions: workflowBundlerOptions };
}

/**
 * The worker's tools: its own and its MCP servers', in one registry. An MCP server that changes its
 * list swaps the new tools in; one whose new list clashes keeps the old.
 */
async function buildRegistry(
  config: WorkerConfig,
  limits: Limits,
  approvers: ApproversConfig | undefined,
): Promise<{ registry: ToolRegistry; mcp?: McpToolSet }> {
  const own = await resolveTools(config);
  const log = config.log ?? ((line: string) => console.error(line));
  // Every worker connects, a workflows-only one too: it runs the reads, as local activities.
  const mcp = await mcpFrom(config.mcp, log);
  let registry: ToolRegistry;
  try {
    registry = withApprovals(
      createRegistry([...own, ...(mcp?.tools() ?? [])], { maxArgsBytes: limits.maxArgsBytes }),
      approvers,
    );
  } catch (err) {
    await mcp?.close();
    throw err;
  }
  mcp?.onChange((tools) => {
    const before = registry.names().join(', ');
    try {
      registry.setTools([...own, ...tools]);
    } catch (err) {
      log(`mcp: the changed tool list was not taken, the old one stays: ${(err as Error).message}`);
      return false;
    }
    const now = registry.names().join(', ');
    if (now !== before) log(`mcp: tools now ${tools.map((t) => t.name).join(', ') || '(none)'}`);
    return true;
  });
  return { registry, ...(mcp ? { mcp } : {}) };
}

async function connectWorker(cfg: ReturnType<typeof resolveConnectConfig>): Promise<NativeConnection> {
  const connectOpts = {
    address: cfg.address,
    ...(cfg.tls ? { tls: cfg.tls as never } : {}),
    ...(cfg.apiKey ? { apiKey: cfg.apiKey } : {}),
    ...(cfg.metadata ? { metadata: cfg.metadata } : {}),
  };
  let connection: NativeConnection;
  try {
    connection = await NativeConnection.connect(connectOpts);
  } catch (err) {
    throw new Error(
      `cannot reach Temporal at ${cfg.address} (${(err as Error).message}); start one with 'openworker-temporal server' or set TEMPORAL_ADDRESS`,
    );
  }
  // Search attributes must exist before a turn upserts them, or its workflow task fails.
  const admin = await Connection.connect(connectOpts);
  try {
    await ensureSearchAttributes(admin, cfg.namespace);
  } finally {
    await admin.close();
  }
  return connection;
}

/**
 * Creates (but does not run) a worker for the turn and session workflows and their activities.
 * `mcp`, when present, holds the MCP connections: close it after the worker stopped.
 */
export async function createWorker(config: WorkerConfig = {}): Promise<{
  worker: Worker;
  connection: NativeConnection;
  taskQueue: string;
  tools: string[];
  model: string;
  approvers?: ApproversConfig;
  mcp?: McpToolSet;
}> {
  const cfg = resolveConnectConfig(config);
  const approvers =
    typeof config.approvers === 'string' ? loadApprovers(config.approvers) : (config.approvers ?? approversFromEnv());
  const limits: Limits = { ...limitsFromEnv(process.env), ...config.limits };
  const dispatchMarker =
    config.dispatchMarker ?? readChoice('OPENWORKER_DISPATCH_MARKER', ['heartbeat', 'update'] as const, 'heartbeat');
  const model = typeof config.model === 'object' ? config.model : loadModel(config.model ?? 'demo');
  const { registry, mcp } = await buildRegistry(config, limits, approvers);
  try {
    const connection = config.connection ?? (await connectWorker(cfg));
    const worker = await Worker.create({
      connection,
      namespace: cfg.namespace,
      taskQueue: cfg.taskQueue,
      ...(config.only === 'activities' ? {} : workflowSource()),
      activities: createActivities({ registry, model, limits, dispatchMarker }),
      // A workflows-only worker still runs the turn's local activities (reads): it just takes no
      // activity tasks from the queue.
      ...(config.only === 'workflows' ? { enableNonLocalActivities: false } : {}),
      sinks: faultSinks(),
      // Payloads are encrypted when keys are configured; long transcripts stay out of history (stored
      // by hash, history keeps a reference).
      dataConverter: defaultDataConverter(),
      identity: config.identity ?? `openworker@${hostname()}:${process.pid}`,
      // A deploy must not turn running tool calls into unknown outcomes.
      shutdownGraceTime: config.shutdownGraceTime ?? '60s',
      // After a crash, the turn's next task first waits on the dead worker's sticky queue (the server
      // trusts a sticky poller seen in the last 10 s); 1 s gets a lost call to recovery_required
      // within heartbeat + 2 s (npm run bench). A live worker starts its tasks in tens of ms.
      stickyQueueScheduleToStartTimeout: config.stickyQueueTimeout ?? '1s',
      maxCachedWorkflows: config.maxCachedWorkflows ?? cacheFromEnv(),
      ...UNTYPED_WORKER_OPTIONS,
    });
    return {
      worker,
      connection,
      taskQueue: cfg.taskQueue,
      tools: registry.names(),
      model: model.name,
      ...(approvers ? { approvers } : {}),
      ...(mcp ? { mcp } : {}),
    };
  } catch (err) {
    await mcp?.close();
    throw err;
  }
}
