import { MESSAGE_LIMIT_PATCH } from './limits';

/**
 * Changes that alter history, each asked with patched() at the moment it would change a command, so
 * turns started by older builds replay (test/replay.test.ts, test/fixtures/histories/).
 */
export const PATCHES = {
  reconcileFence: 'reconcile-fence-v1',
  idsUniquePerSession: 'tool-call-ids-unique-per-session-v1',
  workflowRetryGuard: 'workflow-retry-guard-v1',
  cancelSettlesCalls: 'cancel-settles-in-flight-calls-v1',
  grantsAfterResponse: 'grants-after-pending-response-v1',
  messageLimit: MESSAGE_LIMIT_PATCH,
  recoveryResultLimit: 'recovery-result-limit-v1',
  retryFence: 'recovery-retry-fence-v1',
  revokeWhilePending: 'revoke-during-pending-response-v1',
  heartbeatMarker: 'heartbeat-dispatch-marker-v1',
  localReads: 'local-reads-v1',
  sessionIdCheck: 'session-id-check-v1',
  reservedNames: 'reserved-names-refused-v1',
  retryAsksReconcile: 'recovery-retry-asks-reconcile-v1',
  refusalAfterDispatch: 'refused-retry-after-dispatch-parks-v1',
  transcriptByReference: 'transcript-by-reference-v1',
  messageOptions: 'message-turn-options-v1',
  iterationDefault: 'iteration-default-40-v1',
  sessionOptionsCheck: 'session-options-check-v1',
  steering: 'steering-v1',
  approveWithEdits: 'approve-with-edits-v1',
  leanTurn: 'lean-turn-v1',
  // Asked directly (never through `lean`): a parked turn upserts its inbox rows as memo.
  inboxMemo: 'inbox-memo-v1',
  /** Asked directly (not through `leanTurn`): a park of a call planned with `notify` schedules the notify activity. */
  notifyActivity: 'notify-activity-v1',
  /** The session continues as new onto its deployment's new current version (worker versioning). */
  upgradeOnNewVersion: 'session-upgrade-on-new-version-v1',
} as const;

/**
 * Whether a patch applies to this run. A turn recorded with `leanTurn` takes every patch as applied
 * without asking: patched() records a marker and a search attribute upsert per patch, and a new run
 * would ask three of them in its first tasks (docs/performance.md, "Per cause"). Older histories
 * lack the marker and ask each patch where they always did.
 */
export type PatchGate = (name: string) => boolean;
