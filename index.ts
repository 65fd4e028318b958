// The public API of openworker-temporal: everything of /worker and /client (and the protocol they
// share). Workflow code imports openworker-temporal/workflow instead.
export * from './api/worker';
export * from './api/client';
export { resolveConnectConfig } from './runtime/connection';
