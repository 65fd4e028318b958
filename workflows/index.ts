// The workflow bundle's entry point: only deterministic code may be reachable from here.
export { session } from './session';
export { agentTurn } from './turn';
export { toolNames } from './tools';
export { scheduledTurn } from './scheduledTurn';
