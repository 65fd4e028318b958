import assert from 'node:assert/strict';
import { EXECUTION_ID_META } from '../activities/mcp/tools';
import { packageVersion } from '../runtime/stateDir';
import type { ScenarioResult } from './support/conformance';
import { expectedFailures, failedChecks, passed, runClientScenarios } from './support/conformance';

// The client scenarios of @modelcontextprotocol/conformance (pinned in package.json), each run
// against our MCP client code by test/support/conformanceClient.ts. A scenario passes unless it is
// in test/fixtures/mcp-conformance-expected-failures.json, with the reason; one listed there must
// still fail, so the list cannot outlive what it describes. No Temporal: localhost servers only.

describe('MCP conformance: the client scenarios', function () {
  this.timeout(150_000); // two runs of the suite, each bounded at 60 s (about 10 s in all, usually)
  let summary: string[];
  let results: ScenarioResult[];
  const byName = (name: string): ScenarioResult => {
    const r = results.find((x) => x.scenario === name);
    assert.ok(r, `no result for scenario ${name}`);
    return r;
  };

  before(async () => {
    ({ summary, results } = await runClientScenarios({ clientTimeoutMs: 30_000, totalMs: 60_000 }));
  });

  it('runs every client scenario of the suite, and the expected failures name only those', () => {
    assert.ok(summary.includes('initialize') && summary.includes('tools_call'), `suite ran: ${summary.join(', ')}`);
    assert.deepEqual(results.map((r) => r.scenario).sort(), [...summary].sort(), 'a scenario left no checks');
    const unknown = Object.keys(expectedFailures()).filter((name) => !summary.includes(name));
    assert.deepEqual(unknown, [], 'expected failures that the suite no longer has');
  });

  it('passes every scenario not listed as an expected failure, and fails every listed one', () => {
    const expected = expectedFailures();
    const wrong = results.flatMap((r) => {
      if (r.scenario in expected)
        return passed(r.checks) ? [`${r.scenario} passes now: take it out of the expected failures`] : [];
      if (passed(r.checks)) return [];
      const failed = failedChecks(r.checks);
      const why = failed.length
        ? failed.map((c) => `${c.id}: ${c.errorMessage ?? JSON.stringify(c.details)}`).join('; ')
        : 'no check succeeded';
      return [`${r.scenario} fails: ${why}\n  client stdout: ${r.stdout.trim()}\n  client stderr: ${r.stderr.trim()}`];
    });
    assert.deepEqual(wrong, []);
  });

  it("initialize: the client names itself, with the package's version", () => {
    const init = byName('initialize').checks.find((c) => c.id === 'mcp-client-initialization');
    const details = init?.details as { clientName?: string; clientVersion?: string } | undefined;
    assert.deepEqual([details?.clientName, details?.clientVersion], ['openworker-temporal', packageVersion()]);
  });

  it('tools_call runs through our tool: the server gets the execution ID in _meta and the result comes back', () => {
    const r = byName('tools_call');
    const call = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { executionId: string; result: unknown };
    assert.equal(call.result, 'The sum of 2 and 3 is 5');
    const sent = r.checks.flatMap((c) => {
      const body = (c.details as { body?: { method?: string; params?: { _meta?: Record<string, unknown> } } })?.body;
      return c.id === 'incoming-request' && body?.method === 'tools/call' ? [body.params?._meta] : [];
    });
    assert.deepEqual(
      sent.map((m) => m?.[EXECUTION_ID_META]),
      [call.executionId],
    );
  });
});

describe('MCP conformance: the verdict on a scenario', () => {
  const check = (id: string, status: string) => ({ id, status });
  it('passes with a success and nothing failed; never with no checks (a client that died before connecting)', () => {
    assert.equal(passed([]), false);
    assert.equal(passed([check('server-info', 'INFO')]), false);
    assert.equal(passed([check('a', 'SUCCESS'), check('b', 'INFO')]), true);
    assert.equal(passed([check('a', 'SUCCESS'), check('b', 'FAILURE')]), false);
  });
  it('a warning fails it, except a reconnect slightly late by the wall clock', () => {
    assert.equal(passed([check('a', 'SUCCESS'), check('client-sse-last-event-id', 'WARNING')]), false);
    assert.equal(passed([check('a', 'SUCCESS'), check('client-sse-retry-timing', 'WARNING')]), true);
  });
});
