import { readFileSync } from 'node:fs';
import { SimplePlugin } from '@temporalio/plugin';
import type { BundleOptions, ReplayWorkerOptions, Worker, WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities';
import type { ApproversConfig } from '../activities/approvers';
import { loadApprovers } from '../activities/approvers';
import { faultSinks } from '../activities/faults';
import type { Limits } from '../activities/limits';
import type { McpServerConfig } from '../activities/mcp/config';
import type { McpToolSet } from '../activities/mcp/pool';
import type { ModelProvider } from '../activities/model';
import { loadModel } from '../activities/models';
import type { ToolRegistry } from '../activities/registry';
import { withNotify } from '../activities/registry';
import type { Tool } from '../activities/tool';
import { defaultDataConverter } from '../runtime/dataConverter';
import type { ContextStore } from '../runtime/contextStore';
import { contextStoreFor } from '../runtime/contextStore';
import type { Settings } from '../runtime/settings';
import { processSettings } from '../runtime/settings';
import { workflowBundlerOptions } from './bundle';
import { ensureSearchAttributes } from './searchAttributes';
import { attachMcp, mcpConfigs, ownTools, toolRegistry } from './tools';
import { PLUGIN_NAME } from '../workflows/definitions';
import { AGENT_WORKFLOWS_MODULE, AGENT_WORKFLOW_TYPES, prebuiltBundle, workflowsPathWith } from './workflowModules';

/** The worker's heartbeat throttle unless you set one: how late a streamed model call's text can reach the server. */
export const STREAM_HEARTBEAT_THROTTLE = '250ms';

/** What the agent turn runs with: the model, the tools, and their limits. */
export interface OpenWorkerPluginOptions {
  /** The tools the model may call. */
  tools?: Tool[];
  /** Also register the built-in tools (send_email). Default false here; `createWorker` defaults to true. */
  builtins?: boolean;
  /** A `--model` spec or a provider. Default 'demo'. */
  model?: string | ModelProvider;
  /** Size limits on model output and tool results; each defaults to its OPENWORKER_MAX_* variable, else DEFAULT_LIMITS. */
  limits?: Partial<Limits>;
  /** Approvers' public keys and policy, or the path of an approvers file. Default: $OPENWORKER_APPROVERS. */
  approvers?: ApproversConfig | string;
  /** MCP servers whose tools the worker serves (connected when the worker runs), or an MCP servers file. Default: $OPENWORKER_MCP. */
  mcp?: McpServerConfig[] | string;
  /** Lines worth an operator's eye (an MCP connection closed, a tool list that changed). Default: stderr. */
  log?: (line: string) => void;
  /**
   * Have parks notified: calls that can park are planned with `notify`, so each park schedules a
   * notify activity for the approvals app's notifiers (docs/approvals.md, Notifications). Default:
   * $OPENWORKER_NOTIFY, else off. Turn it on where notifiers run: otherwise each park's activity waits.
   */
  notify?: boolean;
  /** Add only the activities (a worker that polls no workflow tasks), or everything (default). */
  only?: 'activities';
  /**
   * What the options above default to (OPENWORKER_* and the environment providers and MCP files
   * read). Default: this process's, read once when the plugin is made; an option you set wins.
   */
  settings?: Settings;
}

/** The plugin's resolved parts; `createWorker` builds them itself to connect MCP before the worker exists. */
export interface PluginParts {
  registry: ToolRegistry;
  model: ModelProvider;
  limits: Limits;
  approvers?: ApproversConfig;
  /** Transcripts sent by reference: the payload store, through the codecs. */
  contextStore: ContextStore;
  /** The compaction budget, when set (OPENWORKER_CONTEXT_TOKENS). */
  contextTokens?: number;
  /** Connected when the worker runs, closed when it stops. */
  connectMcp?: () => Promise<McpToolSet | undefined>;
  only?: 'activities';
}

/** The plugin's parts: each option, else its setting (`options.settings`, else this process's, read now), else its default. */
export function pluginParts(options: OpenWorkerPluginOptions = {}): PluginParts {
  const settings = options.settings ?? processSettings();
  const approversFile = typeof options.approvers === 'string' ? options.approvers : settings.approvers;
  const approvers =
    typeof options.approvers === 'object'
      ? options.approvers
      : approversFile
        ? loadApprovers(approversFile)
        : undefined;
  const limits: Limits = { ...settings.limits, ...options.limits };
  const own = ownTools(options.tools ?? [], options.builtins ?? false, settings);
  const registry = withNotify(toolRegistry(own, limits.maxArgsBytes, approvers), options.notify ?? settings.notify);
  const configs = mcpConfigs(options.mcp, settings);
  const log = options.log ?? ((line: string) => console.error(line));
  return {
    registry,
    model: typeof options.model === 'object' ? options.model : loadModel(options.model ?? 'demo', settings.env),
    limits,
    ...(approvers ? { approvers } : {}),
    contextStore: contextStoreFor(settings),
    ...(settings.contextTokens ? { contextTokens: settings.contextTokens } : {}),
    ...(configs.length ? { connectMcp: () => attachMcp(registry, own, configs, log) } : {}),
    ...(options.only ? { only: options.only } : {}),
  };
}

/**
 * How long one workflow activation may run before the SDK stops it. The SDK's 5 s default is a
 * crash, not a guard: a timed-out activation with promises in flight aborts the whole worker
 * process ("async hook stack has become corrupted", nodejs/node#38503, sdk-typescript#939). A flood
 * of signals to one turn ends up in one activation; the SDK spends ~0.5-1 ms per signal there, so
 * the 10,000 a server takes per execution need ~5-10 s (node dist/bench/floodRepro.js). 60 s lets
 * them finish; test/unit/workerOptions.test.ts checks the SDK still takes the setting.
 */
export const ISOLATE_EXECUTION_TIMEOUT = '60s';

/** Worker options the SDK honours (worker-options.js) though its WorkerOptions type leaves them out. */
export const UNTYPED_WORKER_OPTIONS: object = { isolateExecutionTimeout: ISOLATE_EXECUTION_TIMEOUT };

/**
 * Agent turns in your own worker: `Worker.create({ ..., plugins: [new OpenWorkerPlugin({ tools, model })] })`
 * adds the session and turn workflows beside yours, the model and tool activities, the data
 * converter (encryption, payload store) and the fault sinks, on your task queue. On a Client
 * (`new Client({ plugins: [...] })`) it sets the same data converter, so your client reads what the
 * worker wrote.
 */
export class OpenWorkerPlugin extends SimplePlugin {
  /** Resolved on a worker's first use, so a Client's plugin loads no model and no tools. */
  private readonly parts: () => PluginParts;

  constructor(options: OpenWorkerPluginOptions | { parts: PluginParts; settings: Settings } = {}) {
    // An entry point: the settings are read once, here, unless given.
    const settings = options.settings ?? processSettings();
    let parts: PluginParts | undefined;
    const resolve = () => (parts ??= 'parts' in options ? options.parts : pluginParts({ ...options, settings }));
    super({
      name: PLUGIN_NAME,
      dataConverter: defaultDataConverter(settings),
      activities: (theirs) => withActivities(theirs, createActivities(resolve())),
    });
    this.parts = resolve;
  }

  configureWorker(options: WorkerOptions): WorkerOptions {
    const configured = withTurnTracing(super.configureWorker(options));
    return {
      ...configured,
      ...(this.parts().only === 'activities' ? {} : workflowsFor(configured)),
      sinks: { ...faultSinks(), ...configured.sinks },
      // Defaults the guarantee leans on; a value you set wins.
      // A deploy must not turn running tool calls into unknown outcomes.
      shutdownGraceTime: configured.shutdownGraceTime ?? '60s',
      // After a crash a turn's next task waits on the dead worker's sticky queue: 1 s gets a lost
      // call to recovery_required within heartbeat + 2 s (npm run bench).
      stickyQueueScheduleToStartTimeout: configured.stickyQueueScheduleToStartTimeout ?? '1s',
      // A streaming model call's text rides on its heartbeat: sent at most every 250 ms rather than
      // 80% of the heartbeat timeout (8 s), so readers see it as it comes (docs/performance.md).
      maxHeartbeatThrottleInterval: configured.maxHeartbeatThrottleInterval ?? STREAM_HEARTBEAT_THROTTLE,
      ...('isolateExecutionTimeout' in configured ? {} : UNTYPED_WORKER_OPTIONS),
    };
  }

  /** A replayer gets the same workflows (and data converter), so your histories replay with the plugin. */
  configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    const configured = withTurnTracing(super.configureReplayWorker(options));
    return { ...configured, sinks: { ...faultSinks(), ...configured.sinks }, ...workflowsFor(configured) };
  }

  configureBundler(options: BundleOptions): BundleOptions {
    const modules = withTurnTracing({ interceptors: { workflowModules: options.workflowInterceptorModules } });
    return withBundlerOptions({
      ...options,
      workflowsPath: workflowsPathWith(options.workflowsPath),
      ...(modules.interceptors?.workflowModules
        ? { workflowInterceptorModules: modules.interceptors.workflowModules }
        : {}),
    });
  }

  async runWorker(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    // A turn's first upsert fails its workflow task while the namespace lacks the search attributes.
    if (worker.connection) await ensureSearchAttributes(worker.connection, worker.options.namespace);
    const mcp = await this.parts().connectMcp?.();
    try {
      await next(worker);
    } finally {
      await mcp?.close();
    }
  }
}

/**
 * Ours alone: the prebuilt bundle. Beside yours: one module exporting both, bundled at start (or a
 * bundle you built with `bundleWorkflowCode({ plugins: [plugin] })`, which is taken as it is).
 * A worker that polls no workflow tasks gets none.
 */
function workflowsFor(options: WorkerOptions | ReplayWorkerOptions): Partial<WorkerOptions> {
  if (options.workflowBundle !== undefined) {
    checkBundle(options.workflowBundle);
    return {};
  }
  if (options.workflowsPath === undefined && !options.interceptors?.workflowModules?.length) {
    const bundle = prebuiltBundle();
    if (bundle) return { workflowBundle: { codePath: bundle } };
  }
  return {
    workflowsPath: workflowsPathWith(options.workflowsPath ?? AGENT_WORKFLOWS_MODULE),
    bundlerOptions: withBundlerOptions(options.bundlerOptions ?? {}),
  };
}

/** The SDK's workflow tracing interceptors (OpenTelemetryPlugin adds them). */
const OTEL_WORKFLOW_MODULE = /[\\/]interceptors-opentelemetry[\\/]lib[\\/]workflow-interceptors(\.js)?$/;
/** The turn's: one trace per turn, the waits as spans (workflows/tracing.ts). */
const TURN_TRACING_MODULE = require.resolve('../workflows/tracing');

/**
 * With the SDK's tracing interceptors present, the turn's go before them (they pick the context the
 * SDK's spans start in). Without them, none: a worker that does not trace runs no interceptor.
 */
function withTurnTracing<T extends Pick<WorkerOptions, 'interceptors'>>(options: T): T {
  const modules = options.interceptors?.workflowModules ?? [];
  if (!modules.some((m) => OTEL_WORKFLOW_MODULE.test(m)) || modules.includes(TURN_TRACING_MODULE)) return options;
  return {
    ...options,
    interceptors: { ...options.interceptors, workflowModules: [TURN_TRACING_MODULE, ...modules] },
  };
}

/** A bundle built without the plugin has no agent turn: every turn's task would fail on this worker. */
function checkBundle(bundle: NonNullable<WorkerOptions['workflowBundle']>): void {
  const code = 'code' in bundle ? bundle.code : readFileSync(bundle.codePath, 'utf8');
  const missing = AGENT_WORKFLOW_TYPES.filter((name) => !new RegExp(`function ${name}\\(`).test(code));
  if (missing.length)
    throw new Error(
      `OpenWorkerPlugin: your workflowBundle lacks the workflow${missing.length > 1 ? 's' : ''} ${missing.join(', ')}; build it with bundleWorkflowCode({ workflowsPath, plugins: [new OpenWorkerPlugin()] }), or pass workflowsPath instead`,
    );
}

function withBundlerOptions<T extends Pick<BundleOptions, 'preloadModules' | 'webpackConfigHook'>>(options: T): T {
  const theirs = options.webpackConfigHook;
  const ours = workflowBundlerOptions.webpackConfigHook!;
  return {
    ...options,
    preloadModules: [...new Set([...(options.preloadModules ?? []), ...(workflowBundlerOptions.preloadModules ?? [])])],
    webpackConfigHook: (config) => ours(theirs ? theirs(config) : config),
  };
}

/** Yours and ours; one name registered by both would silently replace yours, so it is refused. */
function withActivities(theirs: object | undefined, ours: object): object {
  const clash = Object.keys(theirs ?? {}).filter((name) => name in ours);
  if (clash.length)
    throw new Error(
      `OpenWorkerPlugin: your worker registers activit${clash.length > 1 ? 'ies' : 'y'} ${clash.map((n) => `'${n}'`).join(', ')}, a name the agent turn uses; rename yours`,
    );
  return { ...theirs, ...ours };
}
