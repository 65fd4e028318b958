import { strict as assert } from 'node:assert';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openRunsQuery } from '../../cli/baseline';
import type { BaselineFacts } from '../../runtime/baseline';
import { baselineStep, ensureBaseline, hasState, readStamp } from '../../runtime/baseline';
import { BASELINE } from '../../workflows/baseline';

// The state directory's baseline stamp (runtime/baseline.ts): what `dev` and `worker` do at start for
// each stamp, directory and count of open runs, and the one line they refuse with.
describe('baseline stamp of the state directory', () => {
  const at = (f: Partial<BaselineFacts>): BaselineFacts => ({
    baseline: 2,
    stamp: undefined,
    hasState: false,
    dir: '/s',
    where: "task queue 'q'",
    freshStart: 'start afresh',
    ...f,
  });
  const cases: [string, Partial<BaselineFacts>, string | RegExp][] = [
    ['no stamp, empty directory: stamped without asking', {}, 'stamp'],
    ['no stamp, state present: the server is asked', { hasState: true }, 'ask'],
    ['no stamp, state present, no open run: stamped', { hasState: true, openRuns: 0 }, 'stamp'],
    ['the same stamp: proceed, whatever the directory holds', { stamp: 2, hasState: true }, 'proceed'],
    ['an older stamp: the server is asked', { stamp: 1, hasState: true }, 'ask'],
    ['an older stamp on an empty directory: asked too', { stamp: 1 }, 'ask'],
    ['an older stamp, no open run: re-stamped', { stamp: 1, hasState: true, openRuns: 0 }, 'stamp'],
    [
      'an older stamp with open runs',
      { stamp: 1, hasState: true, openRuns: 3 },
      /^3 open runs on task queue 'q' may have been started by an older baseline \(state directory \/s is stamped with baseline 1; this build is baseline 2\): drain them with the previous build, or start afresh/,
    ],
    [
      'no stamp with one open run',
      { hasState: true, openRuns: 1 },
      /^1 open run on task queue 'q' .*\(state directory \/s is not stamped, so from before baseline 1;/,
    ],
    [
      'a newer stamp (an older build on a newer directory), not asked',
      { stamp: 3, hasState: true },
      /^state directory \/s is stamped with baseline 3, newer than this build's 2: run a build of baseline 3 or later, or start afresh$/,
    ],
    [
      'a stamp that is not a number',
      { stamp: { malformed: 'one' }, hasState: true },
      /^\/s\/baseline holds 'one', not a baseline number: .*delete the file to have the server checked/,
    ],
  ];
  for (const [name, facts, want] of cases)
    it(name, () => {
      const step = baselineStep(at(facts));
      if (typeof want === 'string') return assert.deepEqual(step, { kind: want });
      assert.equal(step.kind, 'refuse');
      const { message } = step as { message: string };
      assert.match(message, want);
      assert.doesNotMatch(message, /\n/);
    });

  it('reads the stamp and the state from the directory; ensureBaseline asks only when it must, and stamps', async () => {
    const root = mkdtempSync(join(tmpdir(), 'openworker-baseline-'));
    try {
      const dir = join(root, 'state');
      assert.equal(readStamp(dir), undefined);
      assert.equal(hasState(dir), false);
      let asked = 0;
      const ensure = (open: number) =>
        ensureBaseline({
          dir,
          where: 'q',
          freshStart: 'start afresh',
          log: assert.fail,
          countOpenRuns: async () => (asked++, open),
        });
      await ensure(5); // a missing directory: stamped without asking
      assert.deepEqual([readStamp(dir), hasState(dir), asked], [BASELINE, false, 0]);
      writeFileSync(join(dir, 'baseline'), '0\n');
      mkdirSync(join(dir, 'payloads'));
      await assert.rejects(ensure(2), /^Error: 2 open runs on q /);
      assert.deepEqual([readStamp(dir), asked], [0, 1], 'a refusal keeps the old stamp');
      await ensure(0);
      assert.deepEqual([readStamp(dir), asked], [BASELINE, 2]);
      writeFileSync(join(dir, 'baseline'), ' x1 ');
      assert.deepEqual(readStamp(dir), { malformed: 'x1' });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("counts the open runs of this project's workflow types on the worker's queue (versioned: unversioned ones only)", () => {
    const types = `WorkflowType IN ('session', 'agentTurn', 'toolNames', 'scheduledTurn')`;
    assert.equal(
      openRunsQuery('openworker', false),
      `ExecutionStatus='Running' AND TaskQueue='openworker' AND ${types}`,
    );
    assert.equal(
      openRunsQuery("it's", true),
      `ExecutionStatus='Running' AND TaskQueue='it\\'s' AND ${types} AND TemporalWorkerDeploymentVersion IS NULL`,
    );
  });
});
