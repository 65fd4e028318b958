import type { CaseResult, System } from './runner';
import { percentile } from '../report';

// The tau2 bench's table: one row per fault kind and system, and the totals.

export interface Row {
  kind: string;
  system: System;
  cases: number;
  dbMatch: number;
  approved: number;
  writes: number;
  duplicates: number;
  turnsCompleted: number;
  errors: number;
  medianMs: number;
}

const median = (xs: number[]): number => percentile(xs, 50);

export function summarize(results: readonly CaseResult[]): Row[] {
  const rows: Row[] = [];
  const kinds = [...new Set(results.map((r) => r.kind)), 'all'];
  for (const system of [...new Set(results.map((r) => r.system))])
    for (const kind of kinds) {
      const rs = results.filter((r) => r.system === system && (kind === 'all' || r.kind === kind));
      if (!rs.length) continue;
      const sum = (f: (r: CaseResult) => number) => rs.reduce((n, r) => n + f(r), 0);
      rows.push({
        kind,
        system,
        cases: rs.length,
        dbMatch: sum((r) => (r.dbMatch ? 1 : 0)),
        approved: sum((r) => r.approved),
        writes: sum((r) => r.writes),
        duplicates: sum((r) => r.duplicates),
        turnsCompleted: sum((r) => (r.turnCompleted ? 1 : 0)),
        errors: sum((r) => (r.error ? 1 : 0)),
        medianMs: median(rs.map((r) => r.ms)),
      });
    }
  return rows;
}

export function tableOf(rows: readonly Row[]): string {
  const head =
    '| fault | system | cases | DB = reference | writes per approved call | duplicate writes | turns completed | errors | median time |';
  const lines = rows.map(
    (r) =>
      `| ${r.kind} | ${r.system} | ${r.cases} | ${r.dbMatch}/${r.cases} | ${r.writes}/${r.approved} = ${(
        r.writes / Math.max(1, r.approved)
      ).toFixed(
        2,
      )} | ${r.duplicates} | ${r.turnsCompleted}/${r.cases} | ${r.errors} | ${(r.medianMs / 1000).toFixed(1)} s |`,
  );
  return [head, '|---|---|---|---|---|---|---|---|---|', ...lines].join('\n');
}
