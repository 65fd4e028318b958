// openworker-temporal/workflow: safe to import from your workflow code (no Node built-ins, no I/O).
export { session } from '../workflows/session';
export { agentTurn } from '../workflows/turn';
export { toolNames } from '../workflows/tools';
export { scheduledTurn } from '../workflows/scheduledTurn';
export { runAgentTurn, startAgentTurn } from '../workflows/child';
export type { AgentTurnRequest } from '../workflows/child';
export * from './protocol';
