import { temporal } from '@temporalio/proto';
import type { OpenWorkerClient } from '../client/connection';
import type { System } from './config';
import { B0, B1, B1_READ, B2, B3, B3_READ } from './config';
import { eventMs, eventName } from './events';
import type { Cell, RunResult } from './report';
import { maxOf, percentile } from './report';

// What the matrix's runs and histories say: added latency per call, B3 against B1 and B2, events per call.

export interface AddedLatency {
  system: string;
  tool: string;
  /** The baseline: B0, or B1 for B3 (signal-approved against signal-approved, read against read). */
  vs: string;
  p50: number;
  p99: number;
  max: number;
}

/** The system whose turn without calls stands for this one's (the read variants run none). */
const zeroOf = (s: string): string => (s.startsWith('B3') ? B3 : s.startsWith('B1') ? B1 : s);

const ADDED_PAIRS: [System, System][] = [
  [B1, B0],
  [B1_READ, B0],
  [B2, B0],
  [B3, B0],
  [B3_READ, B0],
  [B3, B1],
  [B3_READ, B1_READ],
];

/**
 * Added latency per tool call against a baseline, from turn latencies at N=1 without model latency:
 * each turn with one call, minus the baseline's median for the same turn, minus the difference of
 * the two systems' medians for a turn without calls.
 */
export function addedLatency(runs: readonly RunResult[]): AddedLatency[] {
  const lat = (system: string, k: number, tool: string): number[] =>
    runs
      .filter((r) => r.system === system && r.k === k && r.tool === tool && r.n === 1 && r.latencyMs === 0)
      .flatMap((r) => r.latencies);
  const p50 = (system: string, k: number, tool: string): number => percentile(lat(system, k, tool), 50);
  const out: AddedLatency[] = [];
  for (const [system, vs] of ADDED_PAIRS) {
    for (const tool of ['noop', 'sleep50']) {
      const one = lat(system, 1, tool);
      const base = p50(vs, 1, tool);
      if (!one.length || !Number.isFinite(base)) continue;
      const zero = p50(zeroOf(system), 0, 'noop') - p50(zeroOf(vs), 0, 'noop');
      const perCall = one.map((l) => l - base - zero);
      out.push({ system, tool, vs, p50: percentile(perCall, 50), p99: percentile(perCall, 99), max: maxOf(perCall) });
    }
  }
  return out;
}

export interface Comparison {
  k: number;
  tool: string;
  latencyMs: number;
  n: number;
  approval: 'signal-approved' | 'auto-approved read';
  turnsPerSec: { b1: number; b2: number; b3: number };
  p50: { b0: number; b1: number; b2: number; b3: number };
  /** B3's turns/s over B1's and over B2's. */
  b3OverB1: number;
  b3OverB2: number;
  /** Durability overhead as a share of B3's turn: (B3 p50 − B1 p50) / B3 p50, and the same against B0. */
  overVsB1: number;
  overVsB0: number;
}

/** B3 against B1, B2 and B0 in every cell B3 ran (the read variants against B1's read variant). */
export function comparisons(cs: readonly Cell[]): Comparison[] {
  const at = (system: string, c: Cell): Cell | undefined =>
    cs.find(
      (x) => x.system === system && x.k === c.k && x.tool === c.tool && x.latencyMs === c.latencyMs && x.n === c.n,
    );
  return cs
    .filter((c) => c.system === B3 || c.system === B3_READ)
    .map((b3) => {
      const read = b3.system === B3_READ;
      const [b0, b1, b2] = [at(B0, b3), at(read ? B1_READ : B1, b3), at(B2, b3)];
      return {
        k: b3.k,
        tool: b3.tool,
        latencyMs: b3.latencyMs,
        n: b3.n,
        approval: read ? ('auto-approved read' as const) : ('signal-approved' as const),
        turnsPerSec: { b1: b1?.turnsPerSec ?? NaN, b2: b2?.turnsPerSec ?? NaN, b3: b3.turnsPerSec },
        p50: { b0: b0?.p50 ?? NaN, b1: b1?.p50 ?? NaN, b2: b2?.p50 ?? NaN, b3: b3.p50 },
        b3OverB1: b3.turnsPerSec / (b1?.turnsPerSec ?? NaN),
        b3OverB2: b3.turnsPerSec / (b2?.turnsPerSec ?? NaN),
        overVsB1: (b3.p50 - (b1?.p50 ?? NaN)) / b3.p50,
        overVsB0: (b3.p50 - (b0?.p50 ?? NaN)) / b3.p50,
      };
    });
}

export interface HistoryCost {
  system: string;
  k: number;
  tool: string;
  eventsPerTurn: number;
  bytesPerTurn: number;
  eventsPerCall?: string;
  /** Median time between consecutive events, by hop, over the sampled turns (ms). */
  hops: { hop: string; medianMs: number }[];
}

/** Events, bytes and the slowest hops of up to 20 sampled turns per (system, k, tool). */
export async function historyCosts(c: OpenWorkerClient, samples: Map<string, string[]>): Promise<HistoryCost[]> {
  const out: HistoryCost[] = [];
  for (const [key, ids] of samples) {
    const [system, k, tool] = key.split('|');
    if (!ids.length) continue;
    const sample = ids.slice(0, 20);
    const hops = new Map<string, number[]>();
    let events = 0;
    let bytes = 0;
    for (const id of sample) {
      const h = await c.client.workflow.getHandle(id).fetchHistory();
      const evs = h.events ?? [];
      events += evs.length;
      bytes += temporal.api.history.v1.History.encode(h).finish().length;
      for (let i = 1; i < evs.length; i++) {
        const hop = `${eventName(evs[i - 1]!)} → ${eventName(evs[i]!)}`;
        hops.set(hop, [...(hops.get(hop) ?? []), eventMs(evs[i]!) - eventMs(evs[i - 1]!)]);
      }
    }
    out.push({
      system: system!,
      k: Number(k),
      tool: tool!,
      eventsPerTurn: events / sample.length,
      bytesPerTurn: Math.round(bytes / sample.length),
      hops: [...hops]
        .map(([hop, v]) => ({ hop, medianMs: percentile(v, 50) }))
        .sort((a, b) => b.medianMs - a.medianMs)
        .slice(0, 8),
    });
  }
  return marginalEvents(out);
}

/**
 * Events a call adds: a turn's first call also brings the second model call ((k=1) − (k=0), the
 * family's signal-approved turn without calls); each further call of the same response adds
 * ((k=3) − (k=1)) / 2.
 */
export function marginalEvents(hs: readonly HistoryCost[]): HistoryCost[] {
  const at = (system: string, k: number, tool: string): number | undefined =>
    hs.find((h) => h.system === system && h.k === k && (k === 0 || h.tool === tool))?.eventsPerTurn;
  return hs.map((h) => {
    const zero = at(zeroOf(h.system), 0, 'noop');
    const one = at(h.system, 1, h.tool);
    if (h.k === 1 && zero !== undefined)
      return { ...h, eventsPerCall: `${(h.eventsPerTurn - zero).toFixed(1)} (first call, with its model call)` };
    if (h.k === 3 && one !== undefined)
      return { ...h, eventsPerCall: `${((h.eventsPerTurn - one) / 2).toFixed(1)} (each further call)` };
    return h;
  });
}
