import { strict as assert } from 'node:assert';
import { addedLatency, comparisons, marginalEvents } from '../../bench/analysis';
import { comparisonTable } from '../../bench/matrixReport';
import { cells, durabilityMarkdown, markdownTable, maxOf, percentile, svgChart } from '../../bench/report';
import { maxCachedWorkflowsFrom } from '../../runtime/settings';
import type { RunResult } from '../../bench/report';
import { MIXED, benchMessage, benchModel, calls, callIdsFor, protectedCalls, shapeOf } from '../../bench/workload';

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
      latencyMs: 0,
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
    assert.match(md, /^\| system \| workload \| model ms \| N \|/);
    assert.match(md, /\| B3 \| k=1 noop \| 0 \| 1 \| 2\.0 \| 2\.0 \| 20\.0 \|/);
    const svg = svgChart([c!], ['B3'], 't');
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    assert.match(svg, /turns\/s, log scale/);
    assert.doesNotMatch(svg, /NaN|Infinity/);
  });

  const gen = (messages: Parameters<ReturnType<typeof benchModel>['generate']>[0]['messages']) =>
    benchModel().generate(
      { sessionId: 's', turn: 1, iteration: 1, messages, tools: [] },
      { signal: new AbortController().signal },
    );

  it('the bench model asks for k calls once per turn, with ids unique in the session', async () => {
    const message = benchMessage({ steps: calls(3, 'noop'), latencyMs: 0 });
    const first = await gen([{ role: 'user', content: message }]);
    assert.deepEqual(
      first.toolCalls.map((c) => c.id),
      callIdsFor(0, 3),
    );
    assert.deepEqual(
      first.toolCalls.map((c) => c.name),
      ['noop', 'noop', 'noop'],
    );
    const second = await gen([
      { role: 'user', content: message },
      { role: 'assistant', content: '', toolCalls: first.toolCalls },
    ]);
    assert.deepEqual(second, { text: 'done', toolCalls: [] });
    assert.deepEqual((await gen([{ role: 'user', content: benchMessage({ steps: [], latencyMs: 0 }) }])).toolCalls, []);
  });

  it('the mixed agent: 5 reads, then 1 protected call, then text; the approver names only the protected one', async () => {
    const shape = { steps: MIXED, latencyMs: 0 };
    assert.deepEqual(shapeOf(benchMessage(shape)), shape);
    const messages: Parameters<typeof gen>[0] = [{ role: 'user', content: benchMessage(shape) }];
    const names: string[][] = [];
    for (;;) {
      const r = await gen(messages);
      if (!r.toolCalls.length) break;
      names.push(r.toolCalls.map((c) => c.name));
      messages.push({ role: 'assistant', content: r.text, toolCalls: r.toolCalls });
    }
    assert.deepEqual(names, [Array(5).fill('noop_read'), ['noop']]);
    assert.deepEqual(protectedCalls(shape), [{ response: 1, ids: callIdsFor(1, 1) }]);
    assert.deepEqual(protectedCalls({ steps: calls(3, 'noop'), latencyMs: 0 }), [
      { response: 0, ids: callIdsFor(0, 3) },
    ]);
  });

  it('the bench model waits its fixed latency on every call', async () => {
    const t0 = performance.now();
    await gen([{ role: 'user', content: benchMessage({ steps: calls(1, 'noop'), latencyMs: 60 }) }]);
    assert.ok(performance.now() - t0 >= 55);
  });

  it('compares B3 with B1 and B2: ratios, overhead as a share of the turn, added latency vs B1', () => {
    const run = (system: string, k: number, latencies: number[], seconds = 1): RunResult => ({
      system,
      k,
      tool: 'noop',
      latencyMs: 0,
      n: 1,
      round: 1,
      turns: latencies.length,
      seconds,
      latencies,
      cpuPerTurn: {},
    });
    const runs = [
      run('B0 in-process', 0, [0, 0]),
      run('B0 in-process', 1, [0, 0]),
      run('B1 idiomatic Temporal (signal-approved)', 0, [100, 100]),
      run('B1 idiomatic Temporal (signal-approved)', 1, [150, 150], 2),
      run('B2 naive Temporal', 1, [100, 100]),
      run('B3 ours (signal-approved)', 0, [110, 110]),
      run('B3 ours (signal-approved)', 1, [200, 200], 4),
    ];
    const [c] = comparisons(cells(runs)).filter((x) => x.k === 1);
    assert.equal(c!.b3OverB1, 0.5);
    assert.equal(c!.b3OverB2, 0.25);
    assert.equal(c!.overVsB1, 0.25);
    assert.equal(c!.overVsB0, 1);
    assert.match(
      comparisonTable([c!]),
      /\| k=1 noop \| signal-approved \| 0 \| 1 \| 1\.0 \/ 2\.0 \/ 0\.5 \| 0\.50 \| 0\.25 \|.*\| 50\.0 \| 25\.0% \| 100\.0% \|/,
    );
    const vsB1 = addedLatency(runs).find((a) => a.system === 'B3 ours (signal-approved)' && a.vs.startsWith('B1'));
    assert.equal(vsB1!.p50, 200 - 150 - (110 - 100));
  });

  it("events per call: the first call against the family's turn without calls, each further call from k=3", () => {
    const h = (system: string, k: number, eventsPerTurn: number) => ({
      system,
      k,
      tool: 'noop',
      eventsPerTurn,
      bytesPerTurn: 0,
      hops: [],
    });
    const out = marginalEvents([
      h('B1 idiomatic Temporal (signal-approved)', 0, 11),
      h('B1 idiomatic Temporal (auto-approved read)', 1, 19),
      h('B1 idiomatic Temporal (auto-approved read)', 3, 25),
    ]);
    assert.match(out[1]!.eventsPerCall!, /^8\.0 \(first call/);
    assert.match(out[2]!.eventsPerCall!, /^3\.0 \(each further call\)/);
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
    [undefined, 100],
    ['', 100],
    ['0', 0],
    ['5000', 5000],
    ['-1', /must be a whole number \(0 disables the cache\), got '-1'/],
    ['lots', /got 'lots'/],
    ['2.5', /got '2\.5'/],
  ];
  for (const [raw, want] of cases) {
    it(`${JSON.stringify(raw)} → ${want}`, () => {
      if (typeof want === 'number') assert.equal(maxCachedWorkflowsFrom(raw), want);
      else assert.throws(() => maxCachedWorkflowsFrom(raw), want);
    });
  }
});
