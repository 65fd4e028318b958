import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { approve } from '../client/decisions';
import { cancelTurn } from '../client/cancel';
import { sendMessage, sessionStatus, turnStatus } from '../client/session';
import type { WaitedTurn } from '../client/session';
import { freePort } from '../dev/server';
import type { LedgerEntry } from '../workflows/types';
import { exited, runCli } from './support/processes';
import { eventually, scripted, startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';
import { RECORDER, mcpBin, recorderEvents } from './support/mcpServers';
import { eventsForCall } from './support/eventCounts';

// A worker started with --mcp serves the tools of real MCP servers: server-filesystem and
// server-everything (nobody here wrote them), and test/support/mcpRecorder.ts, which logs the
// `_meta`, held calls and cancellations it sees. Crashes are real SIGKILLs at points the worker reports.

describe('MCP tools in a worker (real MCP servers, real Temporal)', function () {
  this.timeout(120_000);
  const w = useWorld();
  let dir: string;
  let files: string;
  let recorderLog: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'openworker-mcpw-'));
    files = join(dir, 'files');
    recorderLog = join(dir, 'recorder.jsonl');
    mkdirSync(files);
    writeFileSync(join(files, 'notes.txt'), 'the notes');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** Writes the MCP servers file: the filesystem server on `files`, and the recorder. */
  const mcpFile = (extra: Record<string, unknown> = {}): string => {
    const file = join(dir, 'mcp.json');
    const config = {
      servers: {
        files: {
          command: process.execPath,
          args: [mcpBin('mcp-server-filesystem'), files],
          // The server calls write_file idempotent; a second write must never happen unasked here.
          tools: { write_file: { recovery: 'manual', target: 'path' }, move_file: { deny: true } },
        },
        rec: {
          command: process.execPath,
          args: [RECORDER],
          env: { RECORDER_LOG: recorderLog },
          defaults: { timeoutMs: 30_000 },
          tools: { slow_lookup: { local: false } },
        },
        ...extra,
      },
    };
    writeFileSync(file, JSON.stringify(config));
    return file;
  };
  const mcpWorker = (model: string, opts: { faults?: string; extra?: Record<string, unknown> } = {}) =>
    w.worker(model, { ...(opts.faults ? { faults: opts.faults } : {}), extraArgs: ['--mcp', mcpFile(opts.extra)] });
  const recorded = () => recorderEvents(recorderLog);
  const recordedEvent = (event: string, n = 1) =>
    eventually(async () => {
      const found = recorded().filter((e) => e.event === event);
      return found.length >= n && found[n - 1]!;
    }, `the recorder logs '${event}' #${n}`);
  const entry = async (t: { workflowId: string }, toolCallId: string): Promise<LedgerEntry> =>
    (await turnStatus(w.c, t.workflowId)).ledger.find((e) => e.toolCallId === toolCallId)!;
  const entryIn = (t: WaitedTurn, toolCallId: string, state: string) =>
    eventually(
      async () => {
        const e = await entry(t, toolCallId);
        return e?.state === state && e;
      },
      `${toolCallId} reaches ${state}`,
      60_000,
    );

  it('server-filesystem: a read runs unasked; write_file waits for approval and writes once', async () => {
    const out = join(files, 'out.txt');
    const worker = await mcpWorker(
      scripted([
        {
          toolCalls: [
            { id: 'r1', name: 'files__read_text_file', arguments: { path: join(files, 'notes.txt') } },
            { id: 'w1', name: 'files__write_file', arguments: { path: out, content: 'hello' } },
          ],
        },
        { text: 'written' },
      ]),
    );
    assert.match(
      worker.output(),
      /mcp files: \d+ tools: .*files__read_text_file \(read\).*files__write_file \(asks, manual\)/,
    );
    assert.match(worker.output(), /move_file \(denied\)/);
    const sessionId = uniq('mcp-fs');
    const parked = await startTurn(w.c, sessionId, 'write hello');
    assert.equal(parked.state, 'awaiting_approval');
    const read = await entryIn(parked, 'r1', 'succeeded');
    assert.deepEqual(read.result, { content: 'the notes' }, 'its structured content');
    assert.equal(read.approvedBy, 'auto');
    const write = await entry(parked, 'w1');
    assert.deepEqual([write.state, write.target, write.recovery], ['awaiting_approval', out, 'manual']);
    assert.equal(existsSync(out), false, 'nothing is written before the approval');
    await approve(w.c, { sessionId, toolCallId: 'w1', by: 'alice' });
    const done = await turnClosed(w.c, parked);
    const w1 = done.ledger.find((e) => e.toolCallId === 'w1')!;
    assert.deepEqual([w1.state, w1.runs, w1.approvedBy], ['succeeded', 1, 'alice']);
    assert.match(JSON.stringify(w1.result), /Successfully wrote/);
    assert.equal(readFileSync(out, 'utf8'), 'hello');
    // The same history as send_email's (test/turn.test.ts): 11 events; a lean turn's one patch marker
    // is in its first task, and the inbox memo's (with the memo) in the park, before the approval.
    const events = await eventsForCall(w.c, parked.workflowId, w1.executionId, true);
    assert.equal(events.length, 11, events.join(' '));
  });

  it('SIGKILL right after the server wrote the file: recovery_required, the file written once', async () => {
    const out = join(files, 'report.txt');
    const script = scripted([
      { toolCalls: [{ id: 'w1', name: 'files__write_file', arguments: { path: out, content: 'v1' } }] },
      { text: 'done' },
    ]);
    const w1 = await mcpWorker(script, { faults: 'tool.after_execute@files__write_file' });
    const sessionId = uniq('mcp-crash');
    const parked = await startTurn(w.c, sessionId, 'write the report');
    await approve(w.c, { sessionId, toolCallId: 'w1', by: 'alice' });
    const executionId = await w1.faultReached('tool.after_execute');
    assert.equal(readFileSync(out, 'utf8'), 'v1', 'the server applied the write before the crash');
    await w1.kill('SIGKILL');
    // Someone edits the file after the crash: a second run of the approved write would overwrite this.
    writeFileSync(out, 'edited after the crash');
    const written = statSync(out).mtimeMs;
    await mcpWorker(script);
    const e = await entryIn(parked, 'w1', 'recovery_required');
    assert.deepEqual([e.executionId, e.dispatched, e.runs, e.approvedBy], [executionId, true, 1, 'alice']);
    assert.equal(readFileSync(out, 'utf8'), 'edited after the crash', 'never written a second time');
    assert.equal(statSync(out).mtimeMs, written);
    const res = await runCli([
      'recover',
      sessionId,
      'w1',
      '--decision',
      'succeeded',
      '--result',
      '"written"',
      '--by',
      'ops',
      '--task-queue',
      w.taskQueue,
    ]);
    assert.equal(res.code, 0, res.stderr);
    const done = await turnClosed(w.c, parked);
    assert.equal(done.ledger[0]!.state, 'succeeded');
    assert.equal(readFileSync(out, 'utf8'), 'edited after the crash');
  });

  it('bad arguments and a denied tool are error results to the model; nothing reaches the server', async () => {
    await mcpWorker(
      scripted([
        {
          toolCalls: [
            { id: 'b1', name: 'files__write_file', arguments: { path: 5 } },
            { id: 'd1', name: 'files__move_file', arguments: { source: 'a', destination: 'b' } },
          ],
        },
        { text: 'I could not.' },
      ]),
    );
    const t = await startTurn(w.c, uniq('mcp-bad'), 'try');
    const done = await turnClosed(w.c, t);
    const [bad, denied] = done.ledger;
    assert.equal(bad!.state, 'invalid');
    assert.match(bad!.error!, /^invalid arguments for 'files__write_file': content: required; path: must be string$/);
    assert.equal(denied!.state, 'invalid');
    assert.match(denied!.error!, /unknown tool 'files__move_file'/);
    assert.deepEqual(readdirSync(files), ['notes.txt']);
  });

  it('the execution ID reaches the server in _meta; a server killed mid-call parks the call; the next call reconnects', async () => {
    await mcpWorker(
      scripted([
        { toolCalls: [{ id: 'n1', name: 'rec__note', arguments: { text: 'first' } }] },
        { text: 'noted' },
        { toolCalls: [{ id: 'h1', name: 'rec__hold', arguments: { label: 'x' } }] },
        { text: 'held' },
        { toolCalls: [{ id: 'n2', name: 'rec__note', arguments: { text: 'again' } }] },
        { text: 'noted again' },
      ]),
    );
    const sessionId = uniq('mcp-rec');
    const t1 = await startTurn(w.c, sessionId, 'note it');
    await approve(w.c, { sessionId, toolCallId: 'n1', by: 'alice' });
    const done1 = await turnClosed(w.c, t1);
    const note = await recordedEvent('note');
    assert.equal(note.executionId, done1.ledger[0]!.executionId);
    assert.equal(note.attempt, 1);
    assert.match(String(note.executionId), /^owx-[0-9a-f]{32}$/);

    const t2 = await startTurn(w.c, sessionId, 'hold it');
    await approve(w.c, { sessionId, toolCallId: 'h1', by: 'alice' });
    const received = await recordedEvent('received');
    process.kill(received.pid as number, 'SIGKILL');
    const parked = await entryIn(t2, 'h1', 'recovery_required');
    assert.deepEqual([parked.dispatched, parked.runs], [true, 1]);
    assert.ok(
      parked.events.some((ev) => ev.type === 'outcome_unknown' && /MCP server 'rec'.*closed/i.test(String(ev.reason))),
      JSON.stringify(parked.events),
    );
    const res = await runCli([
      'recover',
      sessionId,
      'h1',
      '--decision',
      'failed',
      '--by',
      'ops',
      '--task-queue',
      w.taskQueue,
    ]);
    assert.equal(res.code, 0, res.stderr);
    await turnClosed(w.c, t2);

    const t3 = await startTurn(w.c, sessionId, 'note again');
    await approve(w.c, { sessionId, toolCallId: 'n2', by: 'alice' });
    const done3 = await turnClosed(w.c, t3);
    assert.equal(done3.ledger[0]!.state, 'succeeded');
    const again = await recordedEvent('note', 2);
    assert.notEqual(again.pid, received.pid, 'a new server process');
    assert.equal(recorded().filter((e) => e.event === 'received').length, 1, 'the held call was never sent again');
  });

  it('SIGTERM while an approved MCP call runs: the worker lets it finish, then stops its server', async () => {
    const script = scripted([
      { toolCalls: [{ id: 's1', name: 'rec__slow_note', arguments: { text: 'drain' } }] },
      { text: 'noted' },
    ]);
    const w1 = await mcpWorker(script);
    const sessionId = uniq('mcp-drain');
    const parked = await startTurn(w.c, sessionId, 'note slowly');
    await approve(w.c, { sessionId, toolCallId: 's1', by: 'alice' });
    const received = await recordedEvent('received');
    await w1.kill('SIGTERM');
    assert.equal(w1.proc.exitCode, 0, w1.output().slice(-1000));
    assert.equal(recorded().filter((e) => e.event === 'note').length, 1, 'the call finished before the worker exited');
    await eventually(async () => {
      try {
        process.kill(received.pid as number, 0);
        return false;
      } catch {
        return true;
      }
    }, 'the MCP server stops with its worker');
    await mcpWorker(script);
    const done = await turnClosed(w.c, parked);
    assert.deepEqual([done.ledger[0]!.state, done.ledger[0]!.runs], ['succeeded', 1]);
    assert.equal(done.ledger[0]!.result, 'noted: drain');
    assert.equal(recorded().filter((e) => e.event === 'note').length, 1, 'once');
  });

  it('cancelling a turn sends notifications/cancelled for a read in flight', async () => {
    await mcpWorker(
      scripted([{ toolCalls: [{ id: 's1', name: 'rec__slow_lookup', arguments: { query: 'q' } }] }, { text: 'x' }]),
    );
    const sessionId = uniq('mcp-cancel');
    await sendMessage(w.c, { sessionId, text: 'look it up' });
    const received = await recordedEvent('received');
    const started = Date.now();
    await cancelTurn(w.c, { sessionId, waitMs: 60_000 });
    const cancelled = await recordedEvent('cancelled');
    console.log(`      cancel → notifications/cancelled at the server: ${Date.now() - started} ms`);
    assert.equal(cancelled.executionId, received.executionId);
    const st = await sessionStatus(w.c, sessionId);
    assert.equal(st.turns[0]!.state, 'cancelled');
  });

  it('a tool the server adds while connected (tools/list_changed) is served at the next model call', async () => {
    const worker = await mcpWorker(
      scripted([
        { toolCalls: [{ id: 'u1', name: 'rec__unlock', arguments: {} }] },
        { text: 'unlocked' },
        { toolCalls: [{ id: 'e1', name: 'rec__extra', arguments: { n: 21 } }] },
        { text: 'done' },
      ]),
    );
    assert.doesNotMatch(worker.output(), /rec__extra/);
    const sessionId = uniq('mcp-list');
    await turnClosed(w.c, await startTurn(w.c, sessionId, 'unlock'));
    // The worker says when it swapped the new list in (the SDK debounces the notification).
    await eventually(async () => /mcp: tools now .*rec__extra/.test(worker.output()), 'the worker re-lists');
    const done = await turnClosed(w.c, await startTurn(w.c, sessionId, 'use it'));
    const extra = done.ledger.find((e) => e.toolCallId === 'e1')!;
    assert.deepEqual([extra.state, extra.result], ['succeeded', 'extra 42']);
  });

  it('server-everything over Streamable HTTP: a read runs unasked, a tool without hints asks', async () => {
    const port = await freePort();
    const serve = async () => {
      const proc = spawn(process.execPath, [mcpBin('mcp-server-everything'), 'streamableHttp'], {
        env: { ...process.env, PORT: String(port) },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let err = '';
      proc.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
      await eventually(async () => /listening on port/.test(err), 'server-everything listens');
      return proc;
    };
    let server = await serve();
    try {
      await mcpWorker(
        scripted([
          {
            toolCalls: [
              { id: 'a1', name: 'ev__get-sum', arguments: { a: 2, b: 3 } },
              { id: 't1', name: 'ev__toggle-simulated-logging', arguments: {} },
            ],
          },
          { text: 'done' },
          { toolCalls: [{ id: 't2', name: 'ev__toggle-simulated-logging', arguments: {} }] },
          { text: 'toggled again' },
        ]),
        { extra: { ev: { url: `http://127.0.0.1:${port}/mcp` } } },
      );
      const sessionId = uniq('mcp-http');
      const parked = await startTurn(w.c, sessionId, 'add and toggle');
      const sum = await entryIn(parked, 'a1', 'succeeded');
      assert.match(JSON.stringify(sum.result), /5/);
      assert.equal((await entry(parked, 't1')).state, 'awaiting_approval');
      await approve(w.c, { sessionId, toolCallId: 't1', by: 'alice' });
      const done = await turnClosed(w.c, parked);
      assert.equal(done.ledger.find((e) => e.toolCallId === 't1')!.state, 'succeeded');
      // The server restarts and forgets the worker's session: the next call is turned away (HTTP 400),
      // provably not taken, so it is sent again on a new session; nobody is asked twice.
      server.kill('SIGKILL');
      await exited(server);
      server = await serve();
      const again = await startTurn(w.c, sessionId, 'toggle again');
      await approve(w.c, { sessionId, toolCallId: 't2', by: 'alice' });
      const done2 = await turnClosed(w.c, again);
      const t2 = done2.ledger.find((e) => e.toolCallId === 't2')!;
      assert.deepEqual([t2.state, t2.runs], ['succeeded', 1], JSON.stringify(t2));
    } finally {
      server.kill('SIGKILL');
      await exited(server);
    }
  });
});
