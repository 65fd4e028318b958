import { strict as assert } from 'node:assert';
import type { ReplayResult } from '@temporalio/worker';
import { Worker } from '@temporalio/worker';
import { faultSinks } from '../activities/faults';
import { workflowSource } from '../worker/worker';
import { defaultDataConverter } from '../runtime/dataConverter';
import { FIXTURE_CONVERTER_ENV, HISTORIES, recordedHistories } from './support/histories';

// Every recorded history must replay on the current workflow code without a nondeterminism error:
// a change that alters history needs patched() to pass this.

describe('replay of recorded histories', function () {
  this.timeout(60_000);
  const recorded = recordedHistories();
  const files = recorded.map((r) => r.file);
  // Each history replays under the workflow ID it ran with; results come back by that ID.
  const fileOf = new Map(recorded.map((r) => [r.workflowId, r.file]));
  // One replay worker for all of them (what Worker.runReplayHistory does for one, minus a worker start
  // per history, ~0.7 s each): each history is pushed, replayed and evicted on its own, with its own error.
  const results = new Map<string, ReplayResult>();
  let aborted: unknown;

  before(async function () {
    this.timeout(180_000);
    const histories = recorded.map((r) => ({ workflowId: r.workflowId, history: r.history as never }));
    try {
      const replay = Worker.runReplayHistories(
        {
          ...workflowSource(),
          sinks: faultSinks(),
          replayName: 'fixtures',
          // *-claim-check-v0.json carry encrypted payloads behind old claim-check references.
          dataConverter: defaultDataConverter(FIXTURE_CONVERTER_ENV),
        },
        histories,
      );
      for await (const r of replay) results.set(fileOf.get(r.workflowId) ?? `${r.workflowId}.json`, r);
    } catch (err) {
      // A history the SDK refused outright ends the run: it and the ones after it fail with this.
      aborted = err;
    }
  });

  it('has fixtures to replay, one per workflow', () => {
    assert.ok(files.length >= 3, `expected recorded histories in ${HISTORIES}`);
    assert.equal(fileOf.size, files.length, 'two fixtures of one workflow ID');
  });

  for (const file of files) {
    it(`replays ${file}`, () => {
      const r = results.get(file);
      if (!r) throw aborted ?? new Error(`${file} was not replayed`);
      if (r.error) throw r.error;
    });
  }
});
