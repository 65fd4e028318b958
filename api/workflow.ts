// openworker-temporal/workflow: safe to import from your workflow code (no Node built-ins, no I/O).
export { session } from '../workflows/session';
export { agentTurn } from '../workflows/turn';
export { toolNames } from '../workflows/tools';
export { runAgentTurn, startAgentTurn } from '../workflows/child';
export type { AgentTurnRequest } from '../workflows/child';
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
export { executionIdFor, argsDigest, canonicalJson } from '../workflows/identity';
export type * from '../workflows/types';
