import { hostname } from 'node:os';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { WorkerOptions } from '@temporalio/worker';
import type { ApproversConfig } from '../activities/approvers';
import type { Limits } from '../activities/limits';
import type { McpServerConfig } from '../activities/mcp/config';
import type { McpToolSet } from '../activities/mcp/pool';
import type { ModelProvider } from '../activities/model';
import type { Tool } from '../activities/tool';
import type { ConnectOptions } from '../runtime/connection';
import type { DeploymentVersion } from '../runtime/deployment';
import { deploymentVersion } from '../runtime/deployment';
import { resolveConnectConfig } from '../runtime/connection';
import type { Settings } from '../runtime/settings';
import { processSettings } from '../runtime/settings';
import { workflowBundlerOptions } from './bundle';
import { OpenWorkerPlugin, pluginParts } from './plugin';
import type { TracingOptions } from './telemetry';
import { tracingFromSettings, tracingPlugin } from './telemetry';
import { attachMcp, loadToolModule, mcpConfigs, ownTools } from './tools';
import { AGENT_WORKFLOWS_MODULE, prebuiltBundle } from './workflowModules';

export { ISOLATE_EXECUTION_TIMEOUT, UNTYPED_WORKER_OPTIONS } from './plugin';
export { loadToolModule } from './tools';

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
  /** MCP servers whose tools this worker serves, or the path of an MCP servers file. Default: $OPENWORKER_MCP. */
  mcp?: McpServerConfig[] | string;
  /** Lines worth an operator's eye (an MCP connection closed, a tool list that changed). Default: stderr. */
  log?: (line: string) => void;
  /** Have parks notified (the approvals app's notifiers deliver them). Default: $OPENWORKER_NOTIFY, else off. */
  notify?: boolean;
  /**
   * Worker Deployment Versioning: the version this worker polls as (turns and sessions pinned to it,
   * docs/deploy.md). Default: OPENWORKER_DEPLOYMENT_NAME and OPENWORKER_BUILD_ID, else unversioned.
   */
  deployment?: DeploymentVersion;
  /**
   * Traces (docs/observability.md): where spans go, or false for none. Default: OTLP/HTTP when
   * OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT) is set, else none.
   */
  tracing?: TracingOptions | false;
}

/** The SDK's options for a versioned worker; the workflows declare themselves PINNED too (workflows/index.ts). */
export function workerDeploymentOptions(version: DeploymentVersion | undefined): Partial<WorkerOptions> {
  return version
    ? { workerDeploymentOptions: { useWorkerVersioning: true, version, defaultVersioningBehavior: 'PINNED' } }
    : {};
}

export { DEFAULT_MAX_CACHED_WORKFLOWS } from '../runtime/settings';

/** Everything a worker needs, resolved and validated before it touches Temporal. */
export async function resolveTools(config: WorkerConfig, settings: Settings): Promise<Tool[]> {
  const fromModules: Tool[] = [];
  for (const path of config.toolModules ?? []) fromModules.push(...(await loadToolModule(path)));
  return ownTools([...fromModules, ...(config.tools ?? [])], config.builtins !== false, settings);
}

/** Where the worker's workflows come from, for workers and replayers built without the plugin. */
export function workflowSource():
  { workflowBundle: { codePath: string } } | { workflowsPath: string; bundlerOptions: typeof workflowBundlerOptions } {
  const bundle = prebuiltBundle();
  return bundle
    ? { workflowBundle: { codePath: bundle } }
    : { workflowsPath: AGENT_WORKFLOWS_MODULE, bundlerOptions: workflowBundlerOptions };
}

/** A worker's connection, from the resolved connection settings; failing, one line that says what to do. */
export async function connectWorker(cfg: ReturnType<typeof resolveConnectConfig>): Promise<NativeConnection> {
  try {
    return await NativeConnection.connect({
      address: cfg.address,
      ...(cfg.tls ? { tls: cfg.tls as never } : {}),
      ...(cfg.apiKey ? { apiKey: cfg.apiKey } : {}),
      ...(cfg.metadata ? { metadata: cfg.metadata } : {}),
    });
  } catch (err) {
    throw new Error(
      `cannot reach Temporal at ${cfg.address} (${(err as Error).message}); start one with 'openworker-temporal server' or set TEMPORAL_ADDRESS`,
    );
  }
}

/**
 * Creates (but does not run) a worker for the turn and session workflows and their activities: the
 * batteries-included path (connection, task queue, built-in tools, MCP connected up front), built
 * on OpenWorkerPlugin. `mcp`, when present, holds the MCP connections: close it after the worker stopped.
 * An entry point: the settings are `config.settings`, else read from the environment now, once.
 */
export async function createWorker(config: WorkerConfig = {}): Promise<{
  worker: Worker;
  connection: NativeConnection;
  taskQueue: string;
  tools: string[];
  model: string;
  /** The version it polls as, when versioned. */
  deployment?: DeploymentVersion;
  approvers?: ApproversConfig;
  mcp?: McpToolSet;
  /** Exports the spans still buffered: call it after the worker stopped. Present when the worker traces. */
  flushTraces?: () => Promise<void>;
}> {
  const settings = config.settings ?? processSettings();
  const cfg = resolveConnectConfig(config, settings);
  const own = await resolveTools(config, settings);
  const log = config.log ?? ((line: string) => console.error(line));
  const tracing = config.tracing === false ? undefined : (config.tracing ?? tracingFromSettings(settings.telemetry));
  // MCP is connected here, before the worker exists, so the caller learns its tools up front.
  const parts = pluginParts({ ...config, settings, tools: own, builtins: false, mcp: [], only: undefined });
  // Every worker connects, a workflows-only one too: it runs the reads, as local activities.
  const mcp = await attachMcp(parts.registry, own, mcpConfigs(config.mcp, settings), log);
  try {
    const connection = config.connection ?? (await connectWorker(cfg));
    const worker = await Worker.create({
      connection,
      namespace: cfg.namespace,
      taskQueue: cfg.taskQueue,
      plugins: [
        // First: the turn's tracing interceptors are added when OpenWorkerPlugin sees the SDK's.
        ...(tracing ? [tracingPlugin(tracing)] : []),
        new OpenWorkerPlugin({
          parts: { ...parts, ...(config.only === 'activities' ? { only: 'activities' } : {}) },
          settings,
        }),
      ],
      // Tracing: the worker bundles at start, so the SDK's workflow interceptors join the bundle (the
      // prebuilt one has none); OpenWorkerPlugin adds the turn's before them.
      ...(tracing && config.only !== 'activities' ? { workflowsPath: AGENT_WORKFLOWS_MODULE } : {}),
      // A workflows-only worker still runs the turn's local activities (reads): it just takes no
      // activity tasks from the queue.
      ...(config.only === 'workflows' ? { enableNonLocalActivities: false } : {}),
      identity: config.identity ?? `openworker@${hostname()}:${process.pid}`,
      ...(config.shutdownGraceTime !== undefined ? { shutdownGraceTime: config.shutdownGraceTime } : {}),
      ...(config.stickyQueueTimeout !== undefined
        ? { stickyQueueScheduleToStartTimeout: config.stickyQueueTimeout }
        : {}),
      maxCachedWorkflows: config.maxCachedWorkflows ?? settings.maxCachedWorkflows,
      ...workerDeploymentOptions(config.deployment ? deploymentVersion(config.deployment) : settings.deployment),
    });
    return {
      worker,
      connection,
      taskQueue: cfg.taskQueue,
      tools: parts.registry.names(),
      model: parts.model.name,
      ...(worker.options.workerDeploymentOptions?.useWorkerVersioning
        ? { deployment: worker.options.workerDeploymentOptions.version }
        : {}),
      ...(parts.approvers ? { approvers: parts.approvers } : {}),
      ...(mcp ? { mcp } : {}),
      ...(tracing ? { flushTraces: () => tracing.spanProcessor.forceFlush() } : {}),
    };
  } catch (err) {
    await mcp?.close();
    throw err;
  }
}
