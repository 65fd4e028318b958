import {
  decodeArrayFromPayloads,
  extstoreInboundOptions,
  visit,
  walkListWorkflowExecutionsResponse,
} from '@temporalio/common/lib/internal-non-workflow';
import { INBOX_MEMO } from '../workflows/definitions';
import { type InboxMemo, readInboxMemo } from '../workflows/inboxRows';
import type { OpenWorkerClient } from './connection';

// The parked turns a visibility query lists, each with its inbox memo decoded on its own: a memo
// this client cannot decode (another key) makes that turn unreadable, not the whole list (the SDK's
// list() decodes every memo in one sequence and stops at the first that fails).

export interface ListedTurn {
  workflowId: string;
  runId: string;
  taskQueue: string;
}

export interface ParkedTurns {
  /** Turns with their rows in memo (inbox-memo-v1). */
  rows: { turn: ListedTurn; memo: InboxMemo }[];
  /** Turns started before the memo existed: only a query can read them. */
  older: ListedTurn[];
  unreadable: { workflowId: string; why: string }[];
}

const PAGE_SIZE = 1000;

/** `limit`: stop after the page that reaches this many turns (visibility lists the newest started first). */
export async function parkedTurns(c: OpenWorkerClient, query: string, limit = Infinity): Promise<ParkedTurns> {
  const converter = c.client.options.loadedDataConverter;
  const out: ParkedTurns = { rows: [], older: [], unreadable: [] };
  let nextPageToken: Uint8Array = Buffer.alloc(0);
  for (;;) {
    const res = await c.client.workflowService.listWorkflowExecutions({
      namespace: c.client.options.namespace,
      query,
      pageSize: Math.min(PAGE_SIZE, limit),
      nextPageToken,
    });
    // A memo over the external-storage threshold is a reference: fetched here, as list() would.
    await visit(res, walkListWorkflowExecutionsResponse, extstoreInboundOptions(converter.externalStorage));
    await Promise.all(
      res.executions.map(async (raw) => {
        const turn = {
          workflowId: raw.execution?.workflowId ?? '',
          runId: raw.execution?.runId ?? '',
          taskQueue: raw.taskQueue ?? '',
        };
        const payload = raw.memo?.fields?.[INBOX_MEMO];
        if (!payload) return void out.older.push(turn);
        try {
          const [value] = await decodeArrayFromPayloads(converter, [payload], {
            type: 'workflow',
            namespace: c.client.options.namespace,
            workflowId: turn.workflowId,
          });
          const memo = readInboxMemo(value);
          if (memo) out.rows.push({ turn, memo });
          else out.older.push(turn);
        } catch (err) {
          out.unreadable.push({ workflowId: turn.workflowId, why: (err as Error).message.split('\n')[0]! });
        }
      }),
    );
    if (!res.nextPageToken?.length || out.rows.length + out.older.length + out.unreadable.length >= limit) return out;
    nextPageToken = res.nextPageToken;
  }
}
