import { turnStatus } from '../../client/session';
import type { LedgerEntry } from '../../workflows/types';
import { eventually } from '../support/scenario';
import type { CellContext, CellReport } from './runner';
import type { WorkerProcess } from '../support/processes';

// The steps the matrix's scenarios share: reading the cell's call, waiting on it, approving it, parking it.

export type Scenario = (ctx: CellContext) => Promise<CellReport>;

export const entryOf = async (
  ctx: CellContext,
  workflowId: string,
  toolCallId: string,
): Promise<LedgerEntry & { closed: boolean }> => {
  const s = await turnStatus(ctx.c(), workflowId);
  return { ...s.ledger.find((e) => e.toolCallId === toolCallId)!, closed: s.closed };
};
export const until = (
  ctx: CellContext,
  workflowId: string,
  toolCallId: string,
  pred: (e: LedgerEntry & { closed: boolean }) => boolean,
  what: string,
) =>
  eventually(
    async () => {
      const e = await entryOf(ctx, workflowId, toolCallId).catch(() => undefined);
      return e?.toolCallId && pred(e) ? e : undefined;
    },
    `${ctx.cell.id}: ${what}`,
    60_000,
  );

export type Parked = Awaited<ReturnType<CellContext['startParked']>>;
/** Approves c1 as the approver saw it (its digest). */
export const approveC1 = (ctx: CellContext, t: Parked, workerUp = true) =>
  ctx.approve({ ...t, toolCallId: 'c1', argsDigest: t.entry.argsDigest, workerUp });
/** A call whose committed response is lost parks in recovery_required (F4, manual). */
export async function parkOnLostResponse(ctx: CellContext): Promise<Parked & { worker: WorkerProcess }> {
  const worker = await ctx.worker();
  const t = await ctx.startParked();
  await ctx.peer.arm('commit-then-drop', t.entry.executionId, ctx.args);
  await approveC1(ctx, t);
  await until(ctx, t.workflowId, 'c1', (e) => e.state === 'recovery_required', 'the call parks');
  return { ...t, worker };
}
