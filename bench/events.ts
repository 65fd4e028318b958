import { temporal } from '@temporalio/proto';

// Reading server event timestamps out of a fetched history.

export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

export const eventName = (e: HistoryEvent): string =>
  String(temporal.api.enums.v1.EventType[e.eventType ?? 0]).replace('EVENT_TYPE_', '');

export const eventMs = (e: HistoryEvent): number =>
  Number(e.eventTime?.seconds ?? 0) * 1000 + Math.floor((e.eventTime?.nanos ?? 0) / 1e6);

/** The OpenWorkerState value an UpsertWorkflowSearchAttributes event sets, if any. */
export function upsertedState(e: HistoryEvent): string | undefined {
  const data = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.OpenWorkerState?.data;
  return data ? (JSON.parse(Buffer.from(data).toString('utf8')) as string) : undefined;
}
