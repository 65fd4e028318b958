import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from '@temporalio/worker';
import { faultSinks } from '../activities/faults';
import { workflowSource } from '../worker/worker';
import { defaultDataConverter } from '../runtime/dataConverter';
import { FIXTURE_CONVERTER_ENV, HISTORIES } from './support/histories';

// Every recorded history must replay on the current workflow code without a nondeterminism error:
// a change that alters history needs patched() to pass this.

describe('replay of recorded histories', function () {
  this.timeout(60_000);
  const files = readdirSync(HISTORIES).filter((f) => f.endsWith('.json'));

  it('has fixtures to replay', () => {
    assert.ok(files.length >= 3, `expected recorded histories in ${HISTORIES}`);
  });

  for (const file of files) {
    it(`replays ${file}`, async () => {
      const history: unknown = JSON.parse(readFileSync(join(HISTORIES, file), 'utf8'));
      await Worker.runReplayHistory(
        {
          ...workflowSource(),
          sinks: faultSinks(),
          replayName: file,
          // *-claim-check-v0.json carry encrypted payloads behind old claim-check references.
          dataConverter: defaultDataConverter(FIXTURE_CONVERTER_ENV),
        },
        history,
        file.replace(/\.json$/, ''),
      );
    });
  }
});
