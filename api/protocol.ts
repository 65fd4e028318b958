// The protocol both sides share, workflow-safe: signal, query and search-attribute definitions, ID
// helpers and types. openworker-temporal/workflow and /client re-export it.
export {
  approveSignal,
  rejectSignal,
  recoverSignal,
  decisionsSignal,
  messageSignal,
  grantSignal,
  revokeSignal,
  turnStatusQuery,
  sessionStatusQuery,
  OpenWorkerState,
  OpenWorkerSession,
  SEARCH_ATTRIBUTES,
  DEFAULT_TASK_QUEUE,
  IMPORT_MESSAGE_ID,
  PLUGIN_NAME,
} from '../workflows/definitions';
export { sessionWorkflowId, turnWorkflowId, parseWorkflowId, sessionIdProblem, turnProblem } from '../workflows/ids';
export type { ParsedWorkflowId } from '../workflows/ids';
export { DEFAULT_MAX_ITERATIONS, TURN_OPTIONS, turnOptionsProblem } from '../workflows/turnOptions';
export { executionIdFor, argsDigest, canonicalJson } from '../workflows/identity';
export type * from '../workflows/types';
