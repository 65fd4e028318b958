// The public API of openworker-temporal.
export { defineTool, ToolFailure, UnknownOutcome, isTool } from './activities/tool';
export type {
  Tool,
  ToolConfig,
  ToolContext,
  ToolEffect,
  RecoveryPolicy,
  ReconcileAnswer,
  ToolTimeouts,
  Duration,
} from './activities/tool';
export type { ModelProvider, ModelRequest, ModelResponse, ToolDescriptor } from './activities/model';
export { ModelError } from './activities/model';
export { scriptedModel } from './activities/models/scripted';
export { demoModel } from './activities/models/demo';
export { MODEL_SPECS } from './activities/models';
export { loadModel, defaultModelSpec, smtpConfigFromEnv, paymentsConfigFromEnv } from './api/fromEnv';
export { sendEmailTool } from './activities/tools/sendEmail';
export { createPaymentTool } from './activities/tools/payments';
export { settingsFrom, SettingsError } from './runtime/settings';
export type { Settings } from './runtime/settings';
export { executionIdFor, argsDigest, canonicalJson } from './workflows/identity';
export {
  approveSignal,
  rejectSignal,
  recoverSignal,
  messageSignal,
  turnStatusQuery,
  sessionStatusQuery,
  sessionWorkflowId,
  turnWorkflowId,
  DEFAULT_TASK_QUEUE,
  IMPORT_MESSAGE_ID,
} from './workflows/definitions';
export { parseWorkflowId, sessionIdProblem } from './workflows/ids';
export type { ParsedWorkflowId } from './workflows/ids';
export type * from './workflows/types';
export { connectClient } from './client/connection';
export { resolveConnectConfig } from './runtime/connection';
export type { OpenWorkerClient, ConnectOptions } from './client/connection';
export { sendMessage, waitForTurn, turnStatus, sessionStatus, activeTurn, OpenWorkerError } from './client/session';
export { approve, approveAll, reject, recover } from './client/decisions';
export { cancelTurn } from './client/cancel';
export type { CancelledTurn } from './client/cancel';
export { importSession } from './client/import';
export type { ImportResult } from './client/import';
export { planImport, ImportError, IMPORT_PROTOCOL } from './client/importPlan';
export type { ImportPlan } from './client/importPlan';
export type { DecisionOutcome, DecisionTarget } from './client/decisions';
export { showSession, inbox } from './client/inspect';
export type { SessionView, ExecutionView, InboxItem, InboxFilter } from './client/inspect';
export { createWorker } from './worker/worker';
export { OpenWorkerPlugin } from './worker/plugin';
export type { OpenWorkerPluginOptions } from './worker/plugin';
export { openWorkerClient } from './client/own';
export type { ClientLike } from './client/own';
export { defaultDataConverter } from './runtime/dataConverter';
export type { WorkerConfig } from './worker/worker';
