import { strict as assert } from 'node:assert';
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { freePort } from '../dev/server';
import { readStamp } from '../runtime/baseline';
import { BASELINE } from '../workflows/baseline';
import { turnWorkflowId } from '../workflows/definitions';
import { CLI, ROOT, exited, runCli } from './support/processes';
import { eventually } from './support/scenario';

// `openworker-temporal dev` (what `npm start` runs) on a machine with no keys configured: it
// generates the local key once, the worker, the demo client and a later CLI process share it,
// history holds ciphertext, and the Web UI's codec endpoint wants the token it prints.

describe('dev: encryption on by default, codec endpoint behind a token', function () {
  this.timeout(180_000);
  let dir: string;
  let dev: ChildProcess | undefined;
  let out = '';

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'openworker-dev-'));
  });
  after(async () => {
    if (dev && dev.exitCode === null && dev.signalCode === null) {
      dev.kill('SIGINT');
      const timer = setTimeout(() => dev?.kill('SIGKILL'), 30_000);
      await exited(dev);
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  });

  /** This process's environment without any key or token settings, with state under `state`. */
  const envFor = (state: string, address: string): Record<string, string> => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env))
      // No USER either (#28: as in a container, where dev signed the approvals app in as 'cli').
      if (v !== undefined && !/^(OPENWORKER_(ENCRYPTION|CODEC_TOKEN).*|OPENWORKER_USER|USER|LOGNAME)$/.test(k))
        env[k] = v;
    return { ...env, OPENWORKER_STATE_DIR: state, TEMPORAL_ADDRESS: address, OPENWORKER_MODEL: 'demo' };
  };

  it('generates the key once (0600), shares it with worker and CLI, seals history, and prints the token the endpoint wants', async () => {
    const state = join(dir, 'state');
    const port = await freePort();
    const address = `127.0.0.1:${port}`;
    const env = envFor(state, address);
    dev = spawn(
      process.execPath,
      [
        CLI,
        'dev',
        '--port',
        String(port),
        '--db',
        join(dir, 'temporal.db'),
        '--model',
        'demo',
        '--approvals-port',
        '0',
      ],
      { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    dev.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    dev.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
    await eventually(
      async () =>
        out.includes('Press Ctrl-C to stop') || (dev!.exitCode !== null && assert.fail(`dev exited:\n${out}`)),
      'dev is up',
      120_000,
    );

    const keyFile = join(state, 'encryption-keys.json');
    assert.ok(out.includes(`Generated a payload encryption key in ${keyFile} (mode 0600)`), out);
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
    assert.match(
      Object.keys((JSON.parse(readFileSync(keyFile, 'utf8')) as { keys: object }).keys)[0]!,
      /^local-\d{8}$/,
    );

    // The codec endpoint: refused without the token, answered with the printed one.
    const m =
      /Codec endpoint (http:\/\/127\.0\.0\.1:\d+) \(.*given (\S+)\); other clients send 'Authorization: Bearer ([^']+)'/.exec(
        out,
      );
    assert.ok(m, `the codec line:\n${out}`);
    const [, url, uiEndpoint, token] = m;
    assert.equal(uiEndpoint, `${url}/${token}`);
    const post = (path: string, headers: Record<string, string> = {}) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: '{"payloads":[]}',
      });
    assert.equal((await post('/decode')).status, 401);
    assert.equal((await post('/decode', { authorization: `Bearer ${token}` })).status, 200);
    assert.equal((await post(`/${token}/decode`)).status, 200);

    // #28: the Web UI has the endpoint with its token, but no command line shows it (ps, /proc), nor the server log.
    const ui = /Web UI (http:\/\/localhost:\d+)/.exec(out)?.[1];
    assert.ok(ui, out);
    const settings = (await (await fetch(`${ui}/api/v1/settings`)).json()) as { Codec: { Endpoint: string } };
    assert.equal(settings.Codec.Endpoint, uiEndpoint);
    const db = join(dir, 'temporal.db');
    const commandLines = readdirSync('/proc')
      .filter((pid) => /^\d+$/.test(pid))
      .map((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
        } catch {
          return ''; // ended meanwhile
        }
      });
    // (The installed CLI may be a launcher that runs the binary: one or two processes.)
    const server = commandLines.filter((cmd) => cmd.includes(db) && cmd.includes('start-dev'));
    assert.ok(server.length >= 1, 'the Temporal server among the processes');
    assert.deepEqual(
      commandLines.filter((cmd) => cmd.includes(token!)),
      [],
      'a command line with the codec token',
    );
    assert.ok(!readFileSync(join(dir, 'temporal-server.log'), 'utf8').includes(token!), 'the token in the server log');

    // The approvals app: its URL and a token for the local user, which signs in and lists the demo call.
    const approvals = /Approvals (http:\/\/127\.0\.0\.1:\d+) {3}sign in as (\S+) with (owa_\S+)/.exec(out);
    assert.ok(approvals, `the approvals line:\n${out}`);
    const bearer = { authorization: `Bearer ${approvals[3]}` };
    assert.equal((await fetch(`${approvals[1]}/api/inbox`)).status, 401);
    const me = (await (await fetch(`${approvals[1]}/api/me`, { headers: bearer })).json()) as { name: string };
    assert.equal(me.name, approvals[2]);
    assert.equal(me.name, userInfo().username, 'the login name, not a made-up one');
    const listed = await eventually(async () => {
      const { calls: items } = (await (await fetch(`${approvals[1]}/api/inbox`, { headers: bearer })).json()) as {
        calls: { sessionId: string }[];
      };
      return items.some((i) => i.sessionId === 'demo') && items;
    }, 'the demo call in the approvals inbox');
    assert.ok(listed.length >= 1);

    // The demo turn (sent by dev's own client, run by its worker child) is sealed in history.
    const connection = await Connection.connect({ address });
    try {
      const raw = new Client({ connection });
      const history = await raw.workflow.getHandle(turnWorkflowId('demo', 1)).fetchHistory();
      const bytes = Buffer.from(temporal.api.history.v1.History.encode(history).finish()).toString('latin1');
      assert.ok(!bytes.includes('bob@example.com'), 'the demo recipient is in the server history');
      assert.ok(bytes.includes('binary/openworker-encrypted'));
    } finally {
      await connection.close();
    }

    // A CLI process with the same state dir reads it; one without the key says which key it lacks.
    const shown = await runCli(['inbox', '--session', 'demo'], { env });
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /bob@example\.com/);
    const keyless = await runCli(['show', 'demo'], { env: envFor(join(dir, 'elsewhere'), address) });
    assert.notEqual(keyless.code, 0, `${keyless.stdout}\n${keyless.stderr}`);
    assert.match(keyless.stderr, /payload encrypted with key 'local-\d{8}', and this process has no keys/);

    // A decision from the approvals app is recorded under the signed-in person (#28).
    const item = (
      (await (await fetch(`${approvals[1]}/api/inbox`, { headers: bearer })).json()) as {
        calls: { sessionId: string; executionId: string; argsDigest: string; toolCallId: string }[];
      }
    ).calls.find((i) => i.sessionId === 'demo')!;
    const decided = await fetch(`${approvals[1]}/api/decisions`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ executionId: item.executionId, action: 'approve', argsDigest: item.argsDigest }),
    });
    assert.equal(decided.status, 200, await decided.text());
    const view = (await (
      await fetch(`${approvals[1]}/api/calls/${item.executionId}?session=demo&turn=1&call=${item.toolCallId}`, {
        headers: bearer,
      })
    ).json()) as { entry: { approvedBy?: string } };
    assert.equal(view.entry.approvedBy, userInfo().username);
    assert.notEqual(view.entry.approvedBy, 'cli');

    dev.kill('SIGINT');
    await exited(dev);
    assert.match(out, /Stopped\./);

    // The baseline stamp (docs/deploy.md, "Moving to a new baseline"): dev stamped its state directory.
    // Left by an older baseline (stamp 0), a restart refuses once its server is up: the demo session is
    // still open in that server's database.
    assert.equal(readStamp(state), BASELINE);
    writeFileSync(join(state, 'baseline'), '0\n');
    const again = ['--port', String(await freePort()), '--db', db, '--headless', '--no-demo', '--approvals-port', '0'];
    const refused = await runCli(['dev', ...again], { env, timeoutMs: 90_000 });
    assert.equal(refused.code, 1, `${refused.stdout}\n${refused.stderr}`);
    assert.match(
      refused.stderr,
      /^error: \d+ open runs? on task queue 'openworker' .*stamped with baseline 0; .*: drain them with the previous build, or start with a fresh state directory \(OPENWORKER_STATE_DIR; with --db, a new database file too\)/,
    );
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
    assert.equal(readStamp(state), 0, 'a refusal keeps the old stamp');
  });
});
