import type { AddedLatency, Comparison, HistoryCost } from './analysis';
import type { Histograms } from './matrix';
import type { Cell } from './report';
import { cellOrder, markdownTable } from './report';
import { MIXED, workloadName } from './workload';

// The markdown of the closed-loop matrix: every cell, B3 against B1 and B2, added latency, history, worker tasks.

const f = (x: number, d = 1): string => (Number.isFinite(x) ? x.toFixed(d) : '—');
const pct = (x: number): string => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : '—');
const short = (system: string): string => system.split(' ')[0]! + (system.endsWith('read)') ? ' read' : '');

export interface MatrixReport {
  cells: readonly Cell[];
  systems: readonly string[];
  comparisons: readonly Comparison[];
  added: readonly AddedLatency[];
  history: readonly HistoryCost[];
  workerTasks: Histograms;
  seconds: number;
  rounds: number;
}

export function comparisonTable(rows: readonly Comparison[]): string {
  return [
    '| workload | approval | model ms | N | turns/s B1 / B2 / B3 | B3 ÷ B1 | B3 ÷ B2 | p50 ms B0 / B1 / B2 / B3 | B3 − B1 p50 ms | overhead vs B1, % of B3 turn | overhead vs B0, % of B3 turn |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...[...rows]
      .sort((a, b) => a.latencyMs - b.latencyMs || a.k - b.k || a.tool.localeCompare(b.tool) || a.n - b.n)
      .map(
        (r) =>
          `| ${workloadName(r.k, r.tool)} | ${r.approval} | ${r.latencyMs} | ${r.n} | ${f(r.turnsPerSec.b1)} / ${f(r.turnsPerSec.b2)} / ${f(r.turnsPerSec.b3)} | ${f(r.b3OverB1, 2)} | ${f(r.b3OverB2, 2)} | ${f(r.p50.b0)} / ${f(r.p50.b1)} / ${f(r.p50.b2)} / ${f(r.p50.b3)} | ${f(r.p50.b3 - r.p50.b1)} | ${pct(r.overVsB1)} | ${pct(r.overVsB0)} |`,
      ),
  ].join('\n');
}

/** What the payload store did per turn, in the cells that measured it (not B0's, which has no store). */
export function storeTable(cs: readonly Cell[], systems: readonly string[]): string[] {
  const rows = cs.filter((c) => c.storePerTurn && c.system !== systems[0]).sort(cellOrder(systems));
  if (!rows.length) return [];
  const v = (c: Cell, key: string, d = 2): string => f(c.storePerTurn?.[key] ?? NaN, d);
  return [
    '**The payload store per turn**: objects it gained and their KiB (content-addressed: a payload stored twice is one object); with S3, the requests SeaweedFS counted for the bucket (it counts an existence check, HEAD, as a GET; the S3 driver makes none: it PUTs every payload, one stored before too, so an expiry counts its age from then), the ms it spent answering them, and its process CPU.',
    '',
    '| system | workload | model ms | N | objects | KiB | PUT | GET+HEAD | answering ms | store CPU ms |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (c) =>
        `| ${c.system} | ${workloadName(c.k, c.tool)} | ${c.latencyMs} | ${c.n} | ${v(c, 'objects')} | ${f((c.storePerTurn?.bytes ?? NaN) / 1024, 2)} | ${v(c, 'put')} | ${v(c, 'getOrHead')} | ${f((c.storePerTurn?.putMs ?? NaN) + (c.storePerTurn?.getOrHeadMs ?? NaN))} | ${f(c.cpuPerTurn.store ?? NaN)} |`,
    ),
    '',
  ];
}

export function matrixMarkdown(m: MatrixReport): string {
  return [
    `Closed loop: N concurrent sessions, each starting its next turn when the last one ends, ${m.seconds} s per run (at least 3 turns at N=1 with a slow model), ${m.rounds} interleaved round(s); latency is the client's wall time from start to result; CPU is /proc utime+stime per process over the run, divided by turns. The mixed agent: ${MIXED.map((s) => `${s.k} ${s.tool}`).join(', then ')}, then text (3 model responses). The automatic approver (B1, B3) sends one signal per model response with protected calls, while the model produces it: at once for the first response, for a later one when its model call is scheduled.`,
    '',
    markdownTable(m.cells, m.systems),
    '',
    "**B3 against B1 (idiomatic Temporal) and B2 (naive Temporal)**: turns/s ratios and p50 turn latencies per cell; the auto-approved read rows compare B3's and B1's read variants. Durability overhead as a share of B3's turn: (B3 p50 − B1 p50) / B3 p50 (what our ledger, dispatch marker and grants add to the idiomatic loop), and (B3 p50 − B0 p50) / B3 p50 (everything Temporal and we add to the in-process loop).",
    '',
    comparisonTable(m.comparisons),
    '',
    ...storeTable(m.cells, m.systems),
    "**Added latency per tool call** (N=1, no model latency): per turn with one call, its latency minus the baseline's median for the same turn, minus the difference of the two systems' medians for a turn without calls.",
    '',
    '| system · tool | vs | p50 ms | p99 ms | max ms |',
    '|---|---|---|---|---|',
    ...m.added.map((a) => `| ${a.system} · ${a.tool} | ${short(a.vs)} | ${f(a.p50)} | ${f(a.p99)} | ${f(a.max)} |`),
    '',
    '**History per turn** (20 sampled B1 and B3 turns at N=1 without model latency, `fetchHistory`; bytes = the encoded History proto):',
    '',
    '| system | workload | events/turn | bytes/turn | events per call | slowest hops (median ms between server event timestamps) |',
    '|---|---|---|---|---|---|',
    ...m.history.map(
      (h) =>
        `| ${h.system} | ${workloadName(h.k, h.tool)} | ${f(h.eventsPerTurn)} | ${h.bytesPerTurn} | ${h.eventsPerCall ?? '—'} | ${h.hops
          .slice(0, 4)
          .map((x) => `${x.hop} ${x.medianMs}`)
          .join('; ')} |`,
    ),
    '',
    "**Inside the worker** (the SDK's own histograms, scraped from each worker's Prometheus endpoint over the whole matrix): mean ms per task.",
    '',
    '| worker | workflow tasks | execution | schedule-to-start | activity execution |',
    '|---|---|---|---|---|',
    ...Object.entries(m.workerTasks).map(([w, t]) => {
      const mean = (name: string) => (t[name]?.count ? f(t[name]!.sum / t[name]!.count) : '—');
      return `| ${w} | ${t.temporal_workflow_task_execution_latency?.count ?? 0} | ${mean('temporal_workflow_task_execution_latency')} | ${mean('temporal_workflow_task_schedule_to_start_latency')} | ${mean('temporal_activity_execution_latency')} |`;
    }),
    '',
  ].join('\n');
}
