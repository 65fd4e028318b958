import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { resolveTemporalCli } from '../../dev/temporalCli';
import { ROOT } from './processes';

export const HISTORIES = join(ROOT, 'test', 'fixtures', 'histories');

/**
 * With OPENWORKER_RECORD_HISTORIES=1, end-to-end tests save the histories they produce as replay
 * fixtures (in the Temporal CLI's JSON form). Record them before changing workflow code;
 * test/replay.test.ts replays every one.
 */
export async function recordHistory(workflowId: string, name: string): Promise<void> {
  if (!process.env.OPENWORKER_RECORD_HISTORIES) return;
  const cli = await resolveTemporalCli();
  const json = execFileSync(cli.path, ['workflow', 'show', '--workflow-id', workflowId, '--output', 'json', '--address', process.env.TEMPORAL_ADDRESS!], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  writeFileSync(join(HISTORIES, `${name}.json`), json);
}
