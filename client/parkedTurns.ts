import { limit as concurrencyLimit } from '@temporalio/common/lib/concurrency/limit';
import {
  decodeArrayFromPayloads,
  extstoreInboundOptions,
  visit,
  walkListWorkflowExecutionsResponse,
} from '@temporalio/common/lib/internal-non-workflow';
import { INBOX_MEMO } from '../workflows/definitions';
import { type InboxMemo, readInboxMemo } from '../workflows/inboxRows';
import type { OpenWorkerClient } from './connection';

// The parked turns a visibility query lists, each with its inbox memo fetched and decoded on its own:
// a memo this client cannot read (another key, an object gone from the payload store) makes that
// turn unreadable, not the whole list (the SDK's list() decodes every memo in one sequence and stops
// at the first that fails).

export interface ListedTurn {
  workflowId: string;
  runId: string;
  taskQueue: string;
}

/** A waiting turn the inbox could not read, with why (one line): its calls are not listed. */
export interface UnreadableTurn {
  workflowId: string;
  why: string;
}

export interface ParkedTurns {
  /** Turns with their rows in memo. */
  rows: { turn: ListedTurn; memo: InboxMemo }[];
  unreadable: UnreadableTurn[];
}

/** The first line of an error, as an unreadable turn's `why`. */
export const unreadableTurn = (workflowId: string, err: unknown): UnreadableTurn => ({
  workflowId,
  why: (err as Error).message.split('\n')[0]!,
});

/** Every parked turn of baseline 1 keeps its rows in memo; one without is from an older build. */
const NO_MEMO = 'no inbox memo: a turn of a build before baseline 1 (drain it with that build; docs/deploy.md)';

const PAGE_SIZE = 1000;
/** Memos fetched from the payload store at once (the SDK's list() fetches a page's one at a time). */
const STORE_FETCHES = 8;

/** `limit`: stop after the page that reaches this many turns (visibility lists the newest started first). */
export async function parkedTurns(c: OpenWorkerClient, query: string, limit = Infinity): Promise<ParkedTurns> {
  const converter = c.client.options.loadedDataConverter;
  const inbound = { ...extstoreInboundOptions(converter.externalStorage), limit: concurrencyLimit(STORE_FETCHES) };
  const out: ParkedTurns = { rows: [], unreadable: [] };
  let nextPageToken: Uint8Array = Buffer.alloc(0);
  for (;;) {
    const res = await c.client.workflowService.listWorkflowExecutions({
      namespace: c.client.options.namespace,
      query,
      pageSize: Math.min(PAGE_SIZE, limit),
      nextPageToken,
    });
    await Promise.all(
      res.executions.map(async (raw) => {
        const turn = {
          workflowId: raw.execution?.workflowId ?? '',
          runId: raw.execution?.runId ?? '',
          taskQueue: raw.taskQueue ?? '',
        };
        try {
          // A memo over the external-storage threshold is a reference: fetched here, per turn, as list() would.
          await visit({ executions: [raw] }, walkListWorkflowExecutionsResponse, inbound);
          const payload = raw.memo?.fields?.[INBOX_MEMO];
          if (!payload) return void out.unreadable.push({ workflowId: turn.workflowId, why: NO_MEMO });
          const [value] = await decodeArrayFromPayloads(converter, [payload], {
            type: 'workflow',
            namespace: c.client.options.namespace,
            workflowId: turn.workflowId,
          });
          const memo = readInboxMemo(value);
          if (memo) out.rows.push({ turn, memo });
          else out.unreadable.push({ workflowId: turn.workflowId, why: NO_MEMO });
        } catch (err) {
          out.unreadable.push(unreadableTurn(turn.workflowId, err));
        }
      }),
    );
    if (!res.nextPageToken?.length || out.rows.length + out.unreadable.length >= limit) return out;
    nextPageToken = res.nextPageToken;
  }
}
