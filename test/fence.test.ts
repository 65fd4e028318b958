import { strict as assert } from 'node:assert';
import { PARTITION_ROWS, cellsOf } from './matrix/cells';
import { partitionedRetry, trace } from './matrix/partition';
import { smtpPeer } from './matrix/peers';
import { runWith } from './matrix/runner';
import type { MailSinkProcess } from './support/mailSinkProcess';
import { startMailSinkProcess } from './support/mailSinkProcess';

// The fault-matrix cell F14 "manual + SMTP, answered retry" with a slow sink (test/matrix/cells.ts,
// run by test/matrix.test.ts: MATRIX_ONLY=F14) shows the fenced retry makes one effect. This file
// runs the same flow with `recover --now`: the documented hazard that skipping the fence accepts.

describe('F14 with recover --now: the retry skips the fence', function () {
  this.timeout(180_000);
  let sink: MailSinkProcess;
  before(async () => {
    sink = await startMailSinkProcess();
  });
  after(async () => {
    await sink?.stop();
  });

  it('runs while the cut-off attempt still holds its SMTP connection: the slow server commits both, 2 deliveries (the hazard --now accepts)', async () => {
    const [cell] = cellsOf(PARTITION_ROWS);
    const started = Date.now();
    await runWith(cell!, { peer: smtpPeer(sink) }, async (ctx) => {
      const r = await partitionedRetry(ctx, { now: true });
      trace(`${ctx.cell.id} --now`, r);
      const decided = r.entry.events.find((e) => e.type === 'recovery_decided');
      assert.equal(decided?.skipFence, true, JSON.stringify(decided));
      assert.ok(!r.entry.events.some((e) => e.type === 'retry_fenced'), 'no fence was recorded');
      // The hazard needs W1's request still open when the retry arrives: W1's SDK gives up about 5 s
      // after the park (its local heartbeat timer), and the library decision brings the retry ~0.3 s after it.
      assert.equal(
        r.firstOutcome,
        'stored',
        `the cut-off attempt had hung up before the retry reached the sink: ${JSON.stringify(r.timeline)}`,
      );
      assert.equal(r.deliveries, 2, 'both messages committed: two effects for one approval');
      assert.deepEqual([r.entry.state, r.entry.runs], ['succeeded', 2]);
      assert.equal(r.workflowTaskFailures, 0);
      return {
        cell: `${ctx.cell.id} --now`,
        executionId: r.executionId,
        ms: Date.now() - started,
        workersKilled: 0,
        serverRestarts: 0,
        checks: ['--now: two deliveries'],
      };
    });
  });
});
