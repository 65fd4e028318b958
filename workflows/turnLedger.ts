import { log, setCurrentDetails, upsertMemo, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { InvariantParked } from './call';
import { createCallTelemetry } from './callTelemetry';
import { INBOX_MEMO, OpenWorkerState } from './definitions';
import { renderDetails } from './details';
import { type InboxMemo, inboxRows, isParked, memoKey } from './inboxRows';
import type { LedgerInput } from './ledger';
import { applyLedgerSafely, liveTurnState } from './ledger';
import type { DecisionRecord, LedgerEntry, RecoverSignal, TurnInput, TurnState, TurnStatus } from './types';

/** The ledger's map: every entry set (a new call, a write) is also told to `observe` (metrics, wait spans). */
class ObservedLedger extends Map<string, LedgerEntry> {
  constructor(private readonly observe: (before: LedgerEntry | undefined, after: LedgerEntry) => void) {
    super();
  }

  override set(key: string, value: LedgerEntry): this {
    const before = this.get(key);
    super.set(key, value);
    this.observe?.(before, value);
    return this;
  }
}

export interface TurnEnd {
  state: TurnState;
  text?: string;
  error?: string;
}

/**
 * A turn's ledger and decision audit, and everything that shows them: the `status` query, the
 * `OpenWorkerState` search attribute, the inbox memo and the Web UI's current details, kept in step
 * on every write.
 */
export function createTurnLedger(input: Pick<TurnInput, 'sessionId' | 'turn'>, iteration: () => number) {
  const ledger = new ObservedLedger(createCallTelemetry(input));
  const decisions: DecisionRecord[] = [];
  const recoveries = new Map<string, RecoverSignal>();
  let ended: TurnEnd | undefined;
  let published: TurnState | undefined;
  // The rows visibility holds (as JSON): a later park upserts only rows that differ.
  let memoed: string | undefined;
  let batching = false;
  // Told after each publish: the ledger settled into a state worth showing (workflows/notifyParks.ts).
  const listeners: (() => void)[] = [];

  const now = (): string => new Date().toISOString();
  const entries = (): LedgerEntry[] => [...ledger.values()];
  const state = (): TurnState => ended?.state ?? liveTurnState(entries());
  const status = (): TurnStatus => ({
    sessionId: input.sessionId,
    turn: input.turn,
    state: state(),
    iteration: iteration(),
    ledger: entries(),
    decisions,
    ...(ended?.text !== undefined ? { text: ended.text } : {}),
    ...(ended?.error !== undefined ? { error: ended.error } : {}),
  });

  const publish = (): void => {
    if (batching) return;
    const s = state();
    if (s !== published) {
      upsertSearchAttributes([{ key: OpenWorkerState, value: s }]);
      published = s;
    }
    // Only while parked: once the turn leaves the parked states, the search attribute drops it from
    // the inbox and stale rows are never read.
    if (isParked(s)) {
      const memo: InboxMemo = {
        v: 1,
        sessionId: input.sessionId,
        turn: input.turn,
        rows: inboxRows(entries(), decisions),
      };
      const json = memoKey(memo);
      if (json !== memoed) {
        upsertMemo({ [INBOX_MEMO]: memo });
        memoed = json;
      }
    }
    setCurrentDetails(renderDetails(status()));
    for (const fn of listeners) fn();
  };

  // Never throws: an impossible transition is logged, audited and parks the call (applyLedgerSafely).
  const write = (toolCallId: string, change: LedgerInput): { entry: LedgerEntry; violation?: string } => {
    const entry = ledger.get(toolCallId);
    if (!entry) throw new Error(`ledger: no entry for ${toolCallId}`);
    const next = applyLedgerSafely(entry, change, now());
    if (next.violation)
      log.error(`ledger invariant violated for ${entry.executionId}: ${next.violation}; the call waits for a person`, {
        toolCallId,
        attempted: change.type,
        from: entry.state,
      });
    ledger.set(toolCallId, next.entry);
    publish();
    return next;
  };

  return {
    ledger,
    decisions,
    recoveries,
    now,
    entries,
    status,
    publish,
    /** Calls `fn` after every publish (never within a batch: once, at its end). */
    onPublish(fn: () => void): void {
      listeners.push(fn);
    },
    /**
     * The turn starts `running` (the search attribute is set before anything else happens); a turn
     * started with it set (startAgentTurn, a session's turn) upserts nothing.
     */
    started(): void {
      const given = workflowInfo().typedSearchAttributes.get(OpenWorkerState);
      if (given !== 'running') upsertSearchAttributes([{ key: OpenWorkerState, value: 'running' }]);
      published = 'running';
    },
    /** A handler's write: never throws. */
    record: (toolCallId: string, change: LedgerInput): LedgerEntry => write(toolCallId, change).entry,
    /** A lifecycle step's write: an impossible transition also stops the step (InvariantParked). */
    step(toolCallId: string, change: LedgerInput): LedgerEntry {
      const { entry, violation } = write(toolCallId, change);
      if (violation) throw new InvariantParked(violation);
      return entry;
    },
    /** Runs `writes`, then publishes once: the search attribute gets the state they end in. */
    batch(writes: () => void): void {
      batching = true;
      try {
        writes();
      } finally {
        batching = false;
      }
      publish();
    },
    end(e: TurnEnd): void {
      ended = e;
      publish();
    },
  };
}
