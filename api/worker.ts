// openworker-temporal/worker: agent turns in your worker (the plugin), or a worker of their own.
export { OpenWorkerPlugin } from '../worker/plugin';
export type { OpenWorkerPluginOptions } from '../worker/plugin';
export { createWorker, workerDeploymentOptions } from '../worker/worker';
export type { WorkerConfig } from '../worker/worker';
export type { DeploymentVersion } from '../runtime/deployment';
export { defaultDataConverter, defaultPayloadCodecs, endpointCodec } from '../runtime/dataConverter';
export { defineTool, ToolFailure, UnknownOutcome, isTool } from '../activities/tool';
export type {
  Tool,
  ToolConfig,
  ToolContext,
  ToolEffect,
  RecoveryPolicy,
  ReconcileAnswer,
  ToolTimeouts,
  Duration,
} from '../activities/tool';
export type { ModelProvider, ModelRequest, ModelResponse, ToolDescriptor } from '../activities/model';
export { ModelError } from '../activities/model';
export { scriptedModel } from '../activities/models/scripted';
export { demoModel } from '../activities/models/demo';
export { MODEL_SPECS } from '../activities/models';
export { loadModel, defaultModelSpec, smtpConfigFromEnv, paymentsConfigFromEnv } from './fromEnv';
export { sendEmailTool } from '../activities/tools/sendEmail';
export { createPaymentTool } from '../activities/tools/payments';
export { settingsFrom, SettingsError } from '../runtime/settings';
export type { Settings } from '../runtime/settings';
// Traces and metrics (docs/observability.md).
export { tracingPlugin, tracingFromSettings } from '../worker/telemetry';
export type { TracingOptions } from '../worker/telemetry';
export { runtimeTelemetry } from '../worker/metrics';
export { AGENT_WORKFLOWS_MODULE } from '../worker/workflowModules';
