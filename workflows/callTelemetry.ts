import { log, metricMeter } from '@temporalio/workflow';
import type { CallTransition, CallWait } from './telemetry';
import { METRICS, WAIT_SPANS, callTransitions } from './telemetry';
import { traceHooks } from './traceHooks';
import type { LedgerEntry } from './types';

/**
 * Metrics and wait spans for one turn's ledger writes. Replay-safe: the workflow metric meter emits
 * nothing while replaying, spans leave through a sink, and neither records a command, so history is
 * unchanged (test/otel.test.ts replays every fixture with tracing on). Times are workflow time.
 */
export function createCallTelemetry(turn: { sessionId: string; turn: number }) {
  const parkedAt = new Map<string, number>();
  const key = (e: LedgerEntry, wait: CallWait) => `${wait}:${e.toolCallId}`;
  const emit = (t: CallTransition, e: LedgerEntry): void => {
    switch (t.kind) {
      case 'unknown_outcome':
        metricMeter.createCounter(METRICS.unknownOutcomes, 'calls').add(1, { tool: t.tool });
        return;
      case 'parked':
        parkedAt.set(key(e, t.wait), Date.now());
        metricMeter.createCounter(METRICS.parked, 'calls').add(1, { tool: t.tool, wait: t.wait });
        traceHooks()?.waitStarted(key(e, t.wait), `${WAIT_SPANS[t.wait]}:${t.tool}`, {
          'openworker.tool': t.tool,
          'openworker.execution_id': e.executionId,
          'openworker.session': turn.sessionId,
          'openworker.turn': turn.turn,
        });
        return;
      case 'resumed': {
        const labels = { tool: t.tool, wait: t.wait, outcome: t.outcome };
        metricMeter.createCounter(METRICS.resumed, 'calls').add(1, labels);
        const since = parkedAt.get(key(e, t.wait));
        parkedAt.delete(key(e, t.wait));
        if (since !== undefined)
          metricMeter.createHistogram(METRICS.waitMs, 'int', 'ms').record(Math.max(0, Date.now() - since), labels);
        traceHooks()?.waitEnded(key(e, t.wait), { 'openworker.outcome': t.outcome });
      }
    }
  };
  return (before: LedgerEntry | undefined, after: LedgerEntry): void => {
    // Telemetry never fails a turn's task.
    try {
      for (const t of callTransitions(before, after)) emit(t, after);
    } catch (err) {
      log.warn(`telemetry: ${(err as Error).message}`);
    }
  };
}
