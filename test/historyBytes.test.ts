import { strict as assert } from 'node:assert';
import { DEFAULT_THRESHOLD_BYTES } from '../runtime/payloadStorage';
import { useFakeModelServer } from './support/fakeModelServer';
import { measureHistoryBytes } from './support/historyBytes';
import { uniq } from './support/scenario';
import { useWorld } from './support/world';

// History bytes per model call as the transcript grows (docs/performance.md): large payloads are
// stored by hash outside history, so a model call costs the same whether the transcript has 100
// messages or 1,000, and the model still receives every message.

describe('history bytes per model call', function () {
  this.timeout(120_000);
  const w = useWorld();
  const fake = useFakeModelServer('file');

  it('stay bounded at 10, 100 and 1,000 messages, and the model sees the whole transcript', async () => {
    await w.worker(`openai-compatible:m@${fake.url}`);
    const rows = [];
    for (const n of [10, 100, 1000]) rows.push(await measureHistoryBytes(w.c, uniq('bytes'), n));
    console.log(
      `      ${rows.map((r) => `${r.messages} messages: ${r.modelCallInput} B per model call, ${r.total} B history`).join('; ')}`,
    );
    for (const r of rows)
      assert.ok(r.modelCallInput > 0 && r.modelCallInput <= DEFAULT_THRESHOLD_BYTES + 1024, JSON.stringify(r));
    assert.ok(rows[2]!.modelCallInput < 1024 && rows[2]!.total < 8 * 1024, JSON.stringify(rows[2]));
    assert.deepEqual(
      fake.requests.map((r) => r.body.messages.length),
      [11, 101, 1001],
      'every message reached the model',
    );
  });
});
