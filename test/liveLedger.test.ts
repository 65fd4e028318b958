import { strict as assert } from 'node:assert';
import { approve } from '../client/decisions';
import { turnStatus } from '../client/session';
import { messageIdFor } from '../activities/tools/sendEmail';
import { turnStatusQuery } from '../workflows/definitions';
import type { LedgerEntry } from '../workflows/types';
import { runCli } from './support/processes';
import { useWorld } from './support/world';
import { scripted, startTurn, uniq } from './support/scenario';

// The ledger readers show is true while a tool runs: the dispatch marker is an awaited heartbeat that
// the turn learns only from the attempt's outcome, so `show` and the library read it from the
// running attempt (client/liveDispatch.ts). The worker stops right after the marker, at a point it
// reports, so the tool is "running" for as long as the test looks.

describe('a ledger that is true while the tool runs', function () {
  this.timeout(60_000);
  const w = useWorld();

  it('show and turnStatus say dispatched once the marker is recorded, before the turn knows it', async () => {
    const sessionId = uniq('live');
    const script = scripted([
      { toolCalls: [{ id: 'm1', name: 'send_email', arguments: { to: 'bob@example.com', subject: 'Hi', body: 'x' } }] },
      { text: 'Sent.' },
    ]);
    const w1 = await w.worker(script, { faults: 'tool.after_dispatch@send_email' });
    const parked = await startTurn(w.c, sessionId, 'send it');
    await approve(w.c, { sessionId, toolCallId: 'm1', by: 'alice' });
    const executionId = await w1.faultReached('tool.after_dispatch');
    assert.equal(w.sink.deliveries(messageIdFor(executionId)), 0, 'stopped after the marker, before the send');

    // The turn's own ledger has not learned it yet (this is what the test would see without the overlay).
    const own = await w.c.client.workflow.getHandle(parked.workflowId).query(turnStatusQuery);
    assert.equal(own.ledger[0]!.state, 'running');

    const live = (await turnStatus(w.c, parked.workflowId)).ledger[0]!;
    assert.equal(live.state, 'dispatched');
    assert.equal(live.dispatched, true);
    assert.equal(live.attempts, 1);
    const marker = live.events.at(-1)!;
    assert.equal(marker.type, 'dispatched');
    assert.equal(marker.source, 'heartbeat');
    assert.equal(marker.activityId, executionId);

    const shown = await runCli(['show', sessionId, '--json', '--task-queue', w.taskQueue]);
    assert.equal(shown.code, 0, shown.stderr);
    const e = (JSON.parse(shown.stdout) as { executions: LedgerEntry[] }).executions[0]!;
    assert.equal(e.state, 'dispatched');
    assert.equal(e.dispatched, true);
    const text = await runCli(['show', sessionId, '--task-queue', w.taskQueue]);
    assert.match(text.stdout, /dispatched/);
    await w1.kill('SIGKILL');
  });
});
