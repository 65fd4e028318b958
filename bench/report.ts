// Pure helpers of the benchmark: statistics, the markdown table, the SVG chart.

import type { CrashResult } from './crash';
import type { ParkedRow } from './parked';
import type { ScaleOutResult } from './scaleOut';
import { workloadName } from './workload';

export interface RunResult {
  system: string;
  /** Calls per turn, over all the model's responses. */
  k: number;
  /** The tool of every call, or `mixed`. */
  tool: string;
  /** Every model call's fixed latency, ms. */
  latencyMs: number;
  n: number;
  round: number;
  turns: number;
  seconds: number;
  /** Turn latencies, ms. */
  latencies: number[];
  /** CPU ms per turn, per process. */
  cpuPerTurn: Record<string, number>;
  /** What the payload store did per turn (requests, objects and bytes written), where the run measured it. */
  storePerTurn?: Record<string, number>;
}

/** Max without spreading (B0 runs record hundreds of thousands of samples). */
export const maxOf = (values: readonly number[]): number => values.reduce((m, v) => (v > m ? v : m), -Infinity);

export function percentile(values: readonly number[], p: number): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

export interface Cell {
  system: string;
  k: number;
  tool: string;
  latencyMs: number;
  n: number;
  turnsPerSec: number;
  callsPerSec: number;
  p50: number;
  p99: number;
  max: number;
  cpuPerTurn: Record<string, number>;
  storePerTurn?: Record<string, number>;
  samples: number;
}

/** The turn-weighted mean of each key of a per-turn record over runs. */
function perTurnMean(rs: readonly RunResult[], of: (r: RunResult) => Record<string, number> | undefined) {
  const turns = rs.reduce((a, r) => a + r.turns, 0);
  const keys = [...new Set(rs.flatMap((r) => Object.keys(of(r) ?? {})))];
  return Object.fromEntries(
    keys.map((p) => [p, rs.reduce((a, r) => a + (of(r)?.[p] ?? 0) * r.turns, 0) / Math.max(1, turns)]),
  );
}

/** Merges the rounds of each (system, k, tool, model latency, n). */
export function cells(runs: readonly RunResult[]): Cell[] {
  const groups = new Map<string, RunResult[]>();
  for (const r of runs) {
    const key = `${r.system}|${r.k}|${r.tool}|${r.latencyMs}|${r.n}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  return [...groups.values()].map((rs) => {
    const { system, k, tool, latencyMs, n } = rs[0]!;
    const turns = rs.reduce((a, r) => a + r.turns, 0);
    const seconds = rs.reduce((a, r) => a + r.seconds, 0);
    const lat = rs.flatMap((r) => r.latencies);
    const cpuPerTurn = perTurnMean(rs, (r) => r.cpuPerTurn);
    return {
      system,
      k,
      tool,
      latencyMs,
      n,
      turnsPerSec: turns / seconds,
      callsPerSec: (turns * k) / seconds,
      p50: percentile(lat, 50),
      p99: percentile(lat, 99),
      max: maxOf(lat),
      cpuPerTurn,
      ...(rs.some((r) => r.storePerTurn) ? { storePerTurn: perTurnMean(rs, (r) => r.storePerTurn) } : {}),
      samples: lat.length,
    };
  });
}

const f = (x: number, d = 1): string => (Number.isFinite(x) ? x.toFixed(d) : '—');

/** Cells in table order: model latency, calls, tool, N, then the systems' order. */
export const cellOrder =
  (systems: readonly string[]) =>
  (a: Cell, b: Cell): number =>
    a.latencyMs - b.latencyMs ||
    a.k - b.k ||
    a.tool.localeCompare(b.tool) ||
    a.n - b.n ||
    systems.indexOf(a.system) - systems.indexOf(b.system);

export function markdownTable(cs: readonly Cell[], systems: readonly string[]): string {
  const head =
    '| system | workload | model ms | N | turns/s | calls/s | p50 ms | p99 ms | max ms | CPU ms/turn (server / worker / driver) |';
  const rows = [...cs]
    .sort(cellOrder(systems))
    .map(
      (c) =>
        `| ${c.system} | ${workloadName(c.k, c.tool)} | ${c.latencyMs} | ${c.n} | ${f(c.turnsPerSec)} | ${c.k ? f(c.callsPerSec) : '—'} | ${f(c.p50)} | ${f(c.p99)} | ${f(c.max)} | ${f(c.cpuPerTurn.server ?? NaN)} / ${f(c.cpuPerTurn.worker ?? NaN)} / ${f(c.cpuPerTurn.driver ?? NaN)} |`,
    );
  return [head, '|---|---|---|---|---|---|---|---|---|---|', ...rows].join('\n');
}

/** Two panels (turns/s and p50 latency vs N) for one workload, a line per system. */
export function svgChart(cs: readonly Cell[], systems: readonly string[], title: string): string {
  const W = 420;
  const H = 260;
  const pad = { l: 56, r: 12, t: 28, b: 40 };
  const colors = ['#222', '#d62728', '#1f77b4', '#2ca02c', '#9467bd', '#ff7f0e'];
  const ns = [...new Set(cs.map((c) => c.n))].sort((a, b) => a - b);
  const panel = (metric: 'turnsPerSec' | 'p50', label: string, x0: number): string => {
    // Log scale: B0 and the Temporal systems differ by three to four orders of magnitude.
    const values = cs.map((c) => c[metric]).filter((v) => Number.isFinite(v) && v > 0);
    const lo = 10 ** Math.floor(Math.log10(Math.max(0.1, Math.min(...values, 1))));
    const hi = 10 ** Math.ceil(Math.log10(Math.max(lo * 10, ...values)));
    const px = (n: number): number =>
      x0 + pad.l + (ns.length > 1 ? (ns.indexOf(n) / (ns.length - 1)) * (W - pad.l - pad.r) : 0);
    const py = (v: number): number =>
      pad.t +
      (1 - (Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * (H - pad.t - pad.b);
    const lines = systems.map((s, i) => {
      const pts = cs.filter((c) => c.system === s && Number.isFinite(c[metric])).sort((a, b) => a.n - b.n);
      if (!pts.length) return '';
      const d = pts.map((c) => `${px(c.n).toFixed(1)},${py(c[metric]).toFixed(1)}`).join(' ');
      const dots = pts
        .map(
          (c) =>
            `<circle cx="${px(c.n).toFixed(1)}" cy="${py(c[metric]).toFixed(1)}" r="3" fill="${colors[i % colors.length]}"/>`,
        )
        .join('');
      return `<polyline fill="none" stroke="${colors[i % colors.length]}" stroke-width="2" points="${d}"/>${dots}`;
    });
    const decades = Array.from({ length: Math.round(Math.log10(hi / lo)) + 1 }, (_, i) => lo * 10 ** i);
    const ticks = decades.map(
      (t) =>
        `<text x="${x0 + pad.l - 6}" y="${py(t) + 4}" text-anchor="end" font-size="10">${t >= 1 ? t.toLocaleString('en-US') : t}</text><line x1="${x0 + pad.l}" x2="${x0 + W - pad.r}" y1="${py(t)}" y2="${py(t)}" stroke="#eee"/>`,
    );
    const xt = ns.map(
      (n) => `<text x="${px(n)}" y="${H - pad.b + 16}" text-anchor="middle" font-size="10">N=${n}</text>`,
    );
    return `<g>${ticks.join('')}${xt.join('')}<text x="${x0 + W / 2}" y="16" text-anchor="middle" font-size="12">${label}</text>${lines.join('')}</g>`;
  };
  // Three systems a row: six names do not fit in one.
  const legend = systems
    .map(
      (s, i) =>
        `<text x="${10 + (i % 3) * 280}" y="${H + 18 + Math.floor(i / 3) * 16}" font-size="11" fill="${colors[i % colors.length]}">■ ${s}</text>`,
    )
    .join('');
  const rows = Math.ceil(systems.length / 3);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * W}" height="${H + 32 + rows * 16}" font-family="sans-serif"><rect width="100%" height="100%" fill="white"/><text x="${W}" y="${H + 24 + rows * 16}" text-anchor="middle" font-size="11">${title}</text>${panel('turnsPerSec', 'turns/s, log scale (higher is better)', 0)}${panel('p50', 'p50 turn latency, ms, log scale (lower is better)', W)}${legend}</svg>\n`;
}

// ---- The durability measurements (bench/parked.ts, crash.ts, scaleOut.ts) ----

export type Spread = { p50: number; p99: number; max: number; samples: number };
const ms = (x: number): string => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '—');
const sp = (s: Spread): string => (s.samples ? `${ms(s.p50)} / ${ms(s.p99)} / ${ms(s.max)} (n=${s.samples})` : '—');

export function durabilityMarkdown(
  parked: ParkedRow[] | undefined,
  crash: CrashResult | undefined,
  scale: ScaleOutResult[],
): string {
  const out: string[] = [];
  if (parked?.length) {
    out.push(
      "**Turns parked on approval**: worker RSS (/proc VmRSS) after parking; approve → dispatch is the approval signal's event to the start of the tool's activity (server timestamps), over turns approved one at a time (p50 / p99 / max ms).",
      '',
      '| worker cache | parked turns | parked per s | worker RSS MiB | approve → dispatch ms |',
      '|---|---|---|---|---|',
      ...parked.map(
        (r) =>
          `| ${r.cache} | ${r.parked.toLocaleString('en-US')} | ${Number.isFinite(r.parkPerSec) ? r.parkPerSec.toFixed(0) : '—'} | ${r.rssMiB.toFixed(0)} | ${sp(r.approveToDispatchMs)} |`,
      ),
      '',
    );
  }
  if (crash) {
    out.push(
      `**SIGKILL mid-tool → recovery_required** (heartbeat timeout ${crash.heartbeatTimeoutMs / 1000} s; the worker reports the instant after the tool's effect and is killed there; p50 / p99 / max ms from the kill to the upsert of recovery_required):`,
      '',
      '| measure | kill → recovery_required ms |',
      '|---|---|',
      `| all kills | ${sp(crash.toRecoveryMs)} |`,
      `| the turn's next task waited on the dead worker's sticky queue | ${sp(crash.viaDeadSticky)} |`,
      `| the turn's next task went to the live worker | ${sp(crash.viaLiveWorker)} |`,
      `| kill → activity timed out (heartbeat) | ${sp({ ...spreadOf(crash.kills.map((k) => k.detectMs)) })} |`,
      '',
      `Effects: ${crash.effects} (one per kill, plus ${crash.turnsRunElsewhere} turns whose call ran on the other worker); **duplicates: ${crash.duplicates}**.`,
      '',
    );
  }
  if (scale.length) {
    out.push(
      '**Scale-out, one worker SIGKILLed mid-tool halfway through** (closed loop, one signal-approved protected call per turn):',
      '',
      '| workers | sessions | turns/s before | turns/s after | stalled turns (p50 / max ms) | parked by the kill (effect applied) | kill → recovery_required ms | duplicates |',
      '|---|---|---|---|---|---|---|---|',
      ...scale.map(
        (r) =>
          `| ${r.workers} → ${r.workers - 1} | ${r.sessions} | ${r.turnsPerSecBefore.toFixed(1)} | ${r.turnsPerSecAfter.toFixed(1)} | ${r.stalled.count} (${ms(r.stalled.p50Ms)} / ${ms(r.stalled.maxMs)}) | ${r.parkedByKill.length} (${r.parkedByKill.filter((p) => p.effectApplied).length}) | ${r.parkedByKill.map((p) => ms(p.toRecoveryMs)).join(', ')} | ${r.duplicates} of ${r.effects} effects |`,
      ),
      '',
      'A turn is parked by the kill when its call was on the killed worker between dispatch and result; the operator checks the effect log (applied → `recover succeeded`, else `recover retry`).',
      '',
    );
  }
  return out.join('\n');
}

export const spreadOf = (v: readonly number[]): Spread => ({
  p50: percentile(v, 50),
  p99: percentile(v, 99),
  max: maxOf(v),
  samples: v.length,
});
