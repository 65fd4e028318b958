import type { Expect, PeerKind, Policy, Row } from './cells';
import { HUMAN_ROWS, PARTITION_ROWS, RERUN_ROWS, ROWS, SERVER_RESTART_ROWS } from './cells';

/**
 * The fault-matrix table of docs/guarantees.md, generated from the matrix itself so the two cannot drift
 * (test/unit/docs.test.ts compares them). `node dist/test/matrix/table.js` prints it.
 */

const POLICIES: Policy[] = ['manual', 'idempotent', 'reconcile'];

function outcome(e: Expect): string {
  const effects = `${e.effects} effect${e.effects === 1 ? '' : 's'}`;
  if (!e.parks?.length)
    return e.state === 'rejected'
      ? `rejected, ${effects}`
      : `${e.runs > 1 ? `runs again by itself` : 'done'}, ${effects}`;
  const answers = e.human?.length ? ` → ${e.human.join(' → ')}` : ', left parked';
  return `asks${e.parks.length > 1 ? ` ×${e.parks.length}` : ''}${answers}, ${effects}`;
}

function cell(row: Row, policy: Policy): string {
  const per = row.peers
    .map((peer: PeerKind) => [peer, row.expect[`${peer}:${policy}`] ?? row.expect[policy]] as const)
    .filter(([peer, e]) => e && !(peer === 'smtp' && policy === 'idempotent'));
  if (!per.length) return '—';
  const texts = per.map(([peer, e]) => [peer, outcome(e!)] as const);
  if (texts.every(([, t]) => t === texts[0]![1])) return texts[0]![1];
  return texts.map(([peer, t]) => `${peer === 'http' ? 'HTTP' : 'SMTP'}: ${t}`).join('<br>');
}

export function matrixTable(): string {
  const lines = [
    '| # | what happens | manual | idempotent | reconcile | what it means for you |',
    '|---|---|---|---|---|---|',
  ];
  for (const row of [...ROWS, ...SERVER_RESTART_ROWS, ...RERUN_ROWS, ...PARTITION_ROWS, ...HUMAN_ROWS]) {
    const id = row.variant ? `${row.row} (${row.variant})` : row.row;
    lines.push(`| ${id} | ${row.title} | ${POLICIES.map((p) => cell(row, p)).join(' | ')} | ${row.meaning} |`);
  }
  return lines.join('\n');
}

if (require.main === module) console.log(matrixTable());
