// openworker-temporal/client: start turns, decide, inspect; every function takes your Client
// (with OpenWorkerPlugin) or one from connectClient().
export { OpenWorkerPlugin } from '../worker/plugin';
export { openWorkerClient } from '../client/own';
export type { ClientLike } from '../client/own';
export { connectClient } from '../client/connection';
export type { OpenWorkerClient, ConnectOptions } from '../client/connection';
export { settingsFrom, SettingsError } from '../runtime/settings';
export type { Settings } from '../runtime/settings';
export { defaultDataConverter, defaultPayloadCodecs } from '../runtime/dataConverter';
export {
  sendMessage,
  waitForTurn,
  turnStatus,
  sessionStatus,
  messageTurn,
  activeTurn,
  OpenWorkerError,
} from '../client/session';
export type { SendMessageInput, SendMessageResult } from '../client/session';
export { approve, approveAll, reject, recover } from '../client/decisions';
export type { DecisionOutcome, DecisionTarget } from '../client/decisions';
export { answer } from '../client/answers';
export type { AnswerTarget } from '../client/answers';
export { grant, revoke, listGrants, approveAlways } from '../client/grants';
export { cancelTurn } from '../client/cancel';
export type { CancelledTurn } from '../client/cancel';
export { importSession } from '../client/import';
export type { ImportResult } from '../client/import';
export { planImport, ImportError, IMPORT_PROTOCOL } from '../client/importPlan';
export type { ImportPlan } from '../client/importPlan';
export { showSession, inbox, inboxListing } from '../client/inspect';
export {
  createSchedule,
  listSchedules,
  describeSchedule,
  pauseSchedule,
  unpauseSchedule,
  triggerSchedule,
  deleteSchedule,
} from '../client/schedules';
export type { CreateScheduleInput, ScheduleView, ScheduleListItem, ScheduledRunView } from '../client/schedules';
export { streamTurn } from '../client/stream';
export type { TextEvent, StreamTurnInput } from '../client/stream';
export type {
  SessionView,
  ExecutionView,
  InboxItem,
  InboxFilter,
  InboxListing,
  UnreadableTurn,
} from '../client/inspect';
export * from './protocol';
