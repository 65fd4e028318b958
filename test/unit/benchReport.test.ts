import { strict as assert } from 'node:assert';
import { cells, markdownTable, maxOf, percentile, svgChart } from '../../bench/report';
import type { RunResult } from '../../bench/report';
import { benchModel, callIdsFor } from '../../bench/workload';

describe('bench: statistics and report (pure)', () => {
  const cases: [number[], number, number][] = [
    [[1, 2, 3, 4], 50, 2],
    [[1, 2, 3, 4], 99, 4],
    [[5], 50, 5],
    [Array.from({ length: 100 }, (_, i) => i + 1), 99, 99],
  ];
  for (const [values, p, expected] of cases) it(`p${p} of ${values.length} values = ${expected}`, () => assert.equal(percentile(values, p), expected));
  it('percentile of nothing is NaN; max of many values does not overflow the stack', () => {
    assert.ok(Number.isNaN(percentile([], 50)));
    assert.equal(maxOf(Array.from({ length: 500_000 }, (_, i) => i)), 499_999);
  });

  it('merges rounds: throughput over total time, percentiles over all samples, CPU weighted by turns', () => {
    const run = (round: number, turns: number, seconds: number, lat: number[], server: number): RunResult => ({ system: 'B3', k: 1, tool: 'noop', n: 1, round, turns, seconds, latencies: lat, cpuPerTurn: { server } });
    const [c] = cells([run(1, 2, 1, [10, 20], 100), run(2, 2, 1, [30, 40], 200)]);
    assert.equal(c!.turnsPerSec, 2);
    assert.equal(c!.callsPerSec, 2);
    assert.equal(c!.p50, 20);
    assert.equal(c!.max, 40);
    assert.equal(c!.cpuPerTurn.server, 150);
    const md = markdownTable([c!], ['B3']);
    assert.match(md, /^\| system \| k \| tool \| N \|/);
    assert.match(md, /\| B3 \| 1 \| noop \| 1 \| 2\.0 \| 2\.0 \| 20\.0 \|/);
    const svg = svgChart([c!], ['B3'], 't');
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.match(svg, /turns\/s/);
  });

  it('the bench model asks for k calls once per turn, with ids unique in the session', async () => {
    const model = benchModel();
    const gen = (messages: Parameters<typeof model.generate>[0]['messages']) => model.generate({ sessionId: 's', turn: 1, iteration: 1, messages, tools: [] }, { signal: new AbortController().signal });
    const first = await gen([{ role: 'user', content: 'bench k=3 tool=noop' }]);
    assert.deepEqual(first.toolCalls.map((c) => c.id), callIdsFor(0, 3));
    assert.deepEqual(first.toolCalls.map((c) => c.name), ['noop', 'noop', 'noop']);
    const second = await gen([{ role: 'user', content: 'bench k=3 tool=noop' }, { role: 'assistant', content: '', toolCalls: first.toolCalls }]);
    assert.deepEqual(second, { text: 'done', toolCalls: [] });
    assert.deepEqual((await gen([{ role: 'user', content: 'bench k=0 tool=noop' }])).toolCalls, []);
  });
});
