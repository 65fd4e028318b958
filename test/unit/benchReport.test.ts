import { strict as assert } from 'node:assert';
import { cells, durabilityMarkdown, markdownTable, maxOf, percentile, svgChart } from '../../bench/report';
import { cacheFromEnv } from '../../worker/worker';
import type { RunResult } from '../../bench/report';
import { benchModel, callIdsFor } from '../../bench/workload';

describe('bench: statistics and report (pure)', () => {
  const cases: [number[], number, number][] = [
    [[1, 2, 3, 4], 50, 2],
    [[1, 2, 3, 4], 99, 4],
    [[5], 50, 5],
    [Array.from({ length: 100 }, (_, i) => i + 1), 99, 99],
  ];
  for (const [values, p, expected] of cases)
    it(`p${p} of ${values.length} values = ${expected}`, () => assert.equal(percentile(values, p), expected));
  it('percentile of nothing is NaN; max of many values does not overflow the stack', () => {
    assert.ok(Number.isNaN(percentile([], 50)));
    assert.equal(maxOf(Array.from({ length: 500_000 }, (_, i) => i)), 499_999);
  });

  it('merges rounds: throughput over total time, percentiles over all samples, CPU weighted by turns', () => {
    const run = (round: number, turns: number, seconds: number, lat: number[], server: number): RunResult => ({
      system: 'B3',
      k: 1,
      tool: 'noop',
      n: 1,
      round,
      turns,
      seconds,
      latencies: lat,
      cpuPerTurn: { server },
    });
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
    assert.match(svg, /turns\/s, log scale/);
    assert.doesNotMatch(svg, /NaN|Infinity/);
  });

  it('the bench model asks for k calls once per turn, with ids unique in the session', async () => {
    const model = benchModel();
    const gen = (messages: Parameters<typeof model.generate>[0]['messages']) =>
      model.generate(
        { sessionId: 's', turn: 1, iteration: 1, messages, tools: [] },
        { signal: new AbortController().signal },
      );
    const first = await gen([{ role: 'user', content: 'bench k=3 tool=noop' }]);
    assert.deepEqual(
      first.toolCalls.map((c) => c.id),
      callIdsFor(0, 3),
    );
    assert.deepEqual(
      first.toolCalls.map((c) => c.name),
      ['noop', 'noop', 'noop'],
    );
    const second = await gen([
      { role: 'user', content: 'bench k=3 tool=noop' },
      { role: 'assistant', content: '', toolCalls: first.toolCalls },
    ]);
    assert.deepEqual(second, { text: 'done', toolCalls: [] });
    assert.deepEqual((await gen([{ role: 'user', content: 'bench k=0 tool=noop' }])).toolCalls, []);
  });
});

describe('bench: the durability tables (pure)', () => {
  const s = (p50: number, n = 3) => ({ p50, p99: p50 + 10, max: p50 + 20, samples: n });
  it('renders parked, crash and scale-out rows with their duplicates', () => {
    const md = durabilityMarkdown(
      [
        {
          cache: 'small (250, the default)',
          parked: 10_000,
          parkPerSec: 17,
          rssMiB: 240.4,
          approveToDispatchMs: s(50),
        },
      ],
      {
        heartbeatTimeoutMs: 2000,
        toRecoveryMs: s(3600),
        viaDeadSticky: s(3600),
        viaLiveWorker: s(NaN, 0),
        kills: [{ detectMs: 2500, toRecoveryMs: 3600, stickyWaitMs: 1000, viaDeadSticky: true }],
        turnsRunElsewhere: 4,
        duplicates: 0,
        effects: 7,
      },
      [
        {
          workers: 3,
          sessions: 16,
          seconds: 30,
          turnsPerSecBefore: 8.25,
          turnsPerSecAfter: 8.1,
          stalled: { count: 2, maxMs: 1500, p50Ms: 1400 },
          killedCall: { toRecoveryMs: 3700 },
          parkedByKill: [{ sessionId: 's1', toRecoveryMs: 3700, effectApplied: true }],
          duplicates: 0,
          effects: 200,
          latencyBeforeMs: s(500),
        },
      ],
    );
    assert.match(md, /\| small \(250, the default\) \| 10,000 \| 17 \| 240 \| 50 \/ 60 \/ 70 \(n=3\) \|/);
    assert.match(md, /\| all kills \| 3,600 \/ 3,610 \/ 3,620 \(n=3\) \|/);
    assert.match(md, /\| the turn's next task went to the live worker \| — \|/);
    assert.match(md, /\*\*duplicates: 0\*\*/);
    assert.match(
      md,
      /\| 3 → 2 \| 16 \| 8\.3 \| 8\.1 \| 2 \(1,400 \/ 1,500\) \| 1 \(1\) \| 3,700 \| 0 of 200 effects \|/,
    );
  });
  it('leaves out what did not run', () => assert.equal(durabilityMarkdown(undefined, undefined, []), ''));
});

describe('worker: OPENWORKER_MAX_CACHED_WORKFLOWS', () => {
  const cases: [string | undefined, number | RegExp][] = [
    [undefined, 250],
    ['', 250],
    ['0', 0],
    ['5000', 5000],
    ['-1', /must be a whole number \(0 disables the cache\), got '-1'/],
    ['lots', /got 'lots'/],
    ['2.5', /got '2\.5'/],
  ];
  for (const [raw, want] of cases) {
    it(`${JSON.stringify(raw)} → ${want}`, () => {
      if (typeof want === 'number') assert.equal(cacheFromEnv(raw), want);
      else assert.throws(() => cacheFromEnv(raw), want);
    });
  }
});
