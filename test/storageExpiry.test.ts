import { strict as assert } from 'node:assert';
import { mkdtempSync, readdirSync, rmSync, statSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from './support/processes';
import { scripted, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Issue #40, hole 1: `storage expire` on a directory store (no encryption) must not delete what a
// live session reads. The store is content-addressed, so a session that starts with the same first
// exchange as an old one stores the old session's files again: reusing them must count as writing.

const DAY_MS = 86_400_000;
const payloadFiles = (dir: string): string[] =>
  readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => /[0-9a-f]{64}$/.test(f))
    .map((f) => join(dir, f));

describe('storage expire and a live session', function () {
  this.timeout(120_000);
  const w = useWorld();
  let store: string;
  beforeEach(() => {
    // A store of this test's own: the expiry deletes from it, and nothing else reads it.
    store = mkdtempSync(join(tmpdir(), 'openworker-expiry-'));
  });
  afterEach(() => rmSync(store, { recursive: true, force: true }));

  const env = () => ({ OPENWORKER_PAYLOAD_STORE: store });
  const cli = (args: string[]) => runCli([...args, '--task-queue', w.taskQueue], { env: env(), timeoutMs: 60_000 });
  // Over 16 KiB, so the turn's input is a stored payload too, not only the transcript's segment.
  const first = `hello ${'x'.repeat(20_000)}`;

  it("a session that reuses an old session's stored files keeps them through `storage expire`", async () => {
    const model = scripted([{ text: 'hi' }, { text: 'again' }]);
    const [a, b] = [uniq('expire-a'), uniq('expire-b')];
    let worker = await w.worker(model, { env: env() });
    const turnA = await cli(['turn', a, first, '--wait']);
    assert.equal(turnA.code, 0, turnA.stderr);
    // Session A ran 40 days ago.
    const old = new Date(Date.now() - 40 * DAY_MS);
    const written = payloadFiles(store);
    assert.ok(written.length > 0, 'session A stored payloads');
    for (const f of written) utimesSync(f, old, old);

    // Session B starts today with the same first exchange, then the operator expires at 30 days.
    const turnB = await cli(['turn', b, first, '--wait']);
    assert.equal(turnB.code, 0, turnB.stderr);
    assert.match(turnB.stdout, /hi/);
    // B stored some of A's files again: those are B's now, and only the rest is old.
    const stillOld = payloadFiles(store).filter((f) => statSync(f).mtimeMs < Date.now() - 30 * DAY_MS).length;
    assert.ok(stillOld < written.length, "B reused some of A's files");
    const expired = await cli(['storage', 'expire', '--days', '30']);
    assert.equal(expired.code, 0, expired.stderr);
    assert.match(expired.stdout, new RegExp(`removed ${stillOld} payload\\(s\\) older than 30 days`));

    // A worker that starts cold (a deploy) reads B's transcript back from the store.
    await worker.kill('SIGKILL');
    worker = await w.worker(model, { env: env() });
    const next = await cli(['turn', b, 'and now?', '--wait']);
    assert.equal(next.code, 0, next.stderr);
    assert.match(next.stdout, /again/);
    const shown = await cli(['show', b]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /hi/);
    assert.match(shown.stdout, /and now\?/);
    await worker.kill('SIGKILL');
  });

  it('a payload that is gone: `show` says which object, where, and what to do, in one line', async () => {
    const session = uniq('gone');
    await w.worker(scripted([{ text: 'hi' }]), { env: env() });
    const turn = await cli(['turn', session, first, '--wait']);
    assert.equal(turn.code, 0, turn.stderr);
    for (const f of payloadFiles(store)) rmSync(f);
    const shown = await cli(['show', session]);
    assert.notEqual(shown.code, 0);
    const lines = shown.stderr.trim().split('\n');
    assert.equal(lines.length, 1, shown.stderr);
    assert.match(
      lines[0]!,
      new RegExp(
        `payload [0-9a-f]{64} is missing from the payload store ${store}: restore it from a backup .*storage expire.*OPENWORKER_PAYLOAD_STORE`,
      ),
    );
  });
});
