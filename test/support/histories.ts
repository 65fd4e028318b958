import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { resolveTemporalCli } from '../../dev/temporalCli';
import { ROOT } from './processes';

export const HISTORIES = join(ROOT, 'test', 'fixtures', 'histories');

/**
 * Every recorded history, each under the workflow ID it ran with (its start event names it): the
 * session refuses to run under another session's ID, so a replay under the file's name would not be
 * the run that was recorded.
 */
export function recordedHistories(): { file: string; workflowId: string; history: unknown }[] {
  return readdirSync(HISTORIES)
    .filter((f) => f.endsWith('.json'))
    .map((file) => {
      const history = JSON.parse(readFileSync(join(HISTORIES, file), 'utf8')) as {
        events?: { workflowExecutionStartedEventAttributes?: { workflowId?: string } }[];
      };
      const started = history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowId;
      return { file, workflowId: started ?? file.replace(/\.json$/, ''), history };
    });
}

/**
 * The data converter settings the recorded histories need: the key that sealed
 * `*-claim-check-v0.json`'s payloads (a fixture's, used nowhere else) and the directory holding
 * what their claim-check references point to.
 */
export const FIXTURE_CONVERTER_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  OPENWORKER_ENCRYPTION_KEYS: `fixture-key=${Buffer.alloc(32, 7).toString('base64')}`,
  OPENWORKER_LEGACY_PAYLOAD_DIR: join(ROOT, 'test', 'fixtures', 'payloads'),
};

/**
 * With OPENWORKER_RECORD_HISTORIES=1, end-to-end tests save the histories they produce as replay
 * fixtures (in the Temporal CLI's JSON form). Record them before changing workflow code;
 * test/replay.test.ts replays every one.
 */
/**
 * A reset copies the first event, so a reset run's `originalExecutionRunId` names the run it was reset
 * from, and the SDK's replayer runs the history under that ID; a real worker gets the reset run's own
 * ID. The turn tells a reset run by its run ID, so recorded reset runs get a placeholder there.
 */
export const RESET_RUN_PLACEHOLDER = '00000000-0000-0000-0000-00000000reset';

export async function recordHistory(
  workflowId: string,
  name: string,
  address = process.env.TEMPORAL_ADDRESS!,
  opts: { resetRun?: boolean; runId?: string } = {},
): Promise<void> {
  if (!process.env.OPENWORKER_RECORD_HISTORIES) return;
  const cli = await resolveTemporalCli(process.env);
  const json = execFileSync(
    cli.path,
    [
      'workflow',
      'show',
      '--workflow-id',
      workflowId,
      ...(opts.runId ? ['--run-id', opts.runId] : []),
      '--output',
      'json',
      '--address',
      address,
    ],
    {
      encoding: 'utf8',
      timeout: 20_000,
    },
  );
  if (!opts.resetRun) return writeFileSync(join(HISTORIES, `${name}.json`), json);
  const history = JSON.parse(json) as {
    events: { workflowExecutionStartedEventAttributes?: { originalExecutionRunId?: string } }[];
  };
  history.events[0]!.workflowExecutionStartedEventAttributes!.originalExecutionRunId = RESET_RUN_PLACEHOLDER;
  writeFileSync(join(HISTORIES, `${name}.json`), JSON.stringify(history, null, 2));
}
