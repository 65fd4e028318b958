import { strict as assert } from 'node:assert';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHECKER_DIR, goTestPorcupine, runPorcupine } from './support/porcupine';

// The independent checker must be able to fail: crafted histories that break one promise each
// (checker/porcupine/testdata/bad) are rejected with that promise named and a visualization written;
// the legal ones next to them (testdata/ok) pass. The fault matrix runs it on its own histories.

const BAD = join(CHECKER_DIR, 'testdata', 'bad');
const OK = join(CHECKER_DIR, 'testdata', 'ok');
const REASONS: Record<string, RegExp> = {
  'duplicate-effect': /a second effect for one approved execution ID/,
  'success-before-effect': /success reported \(activity\) before its effect/,
  'effect-without-approval': /ran without an approval/,
  'effect-without-run': /before any run of the call/,
  'decided-success-without-effect': /success decided before the effect existed/,
  'approved-after-reject': /approved after it was rejected/,
  'protected-retried': /a protected call was retried by Temporal/,
  'two-settling-decisions': /a second recovery decision applied after a person settled the call/,
};

describe('independent checker (checker/porcupine)', function () {
  this.timeout(300_000); // the first build downloads the pinned module

  it('go test: the model rejects every crafted violation for its reason', async () => {
    assert.match(await goTestPorcupine(), /^ok\s/m);
  });

  it('accepts the legal crafted histories', async () => {
    const r = await runPorcupine([OK]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /every history has a legal order/);
  });

  for (const name of Object.keys(REASONS)) {
    it(`rejects ${name}, with a visualization`, async () => {
      const viz = mkdtempSync(join(tmpdir(), 'openworker-porcupine-'));
      try {
        const r = await runPorcupine([join(BAD, `${name}.json`)], viz);
        assert.equal(r.code, 1, r.stdout + r.stderr);
        assert.match(r.stdout, /^VIOLATION /m);
        assert.match(r.stdout, REASONS[name]!);
        const html = readdirSync(viz).filter((f) => f.endsWith('.html'));
        assert.equal(html.length, 1, `visualizations: ${html.join(', ')}`);
        assert.ok(r.stdout.includes(join(viz, html[0]!)), 'the report names the visualization');
      } finally {
        rmSync(viz, { recursive: true, force: true });
      }
    });
  }

  it('every crafted violation has a case here', () => {
    const files = readdirSync(BAD).map((f) => f.replace(/\.json$/, ''));
    assert.deepEqual(files.sort(), Object.keys(REASONS).sort());
  });

  it('refuses an unreadable history rather than passing it', async () => {
    const r = await runPorcupine([join(CHECKER_DIR, 'go.mod')]);
    assert.equal(r.code, 2, r.stdout);
    assert.match(r.stderr, /go\.mod/);
  });
});
