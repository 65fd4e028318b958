import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { parseMcpConfig } from '../activities/mcp/config';
import { connectMcp, listMcpTools } from '../activities/mcp/servers';
import type { McpToolSet } from '../activities/mcp/pool';
import { startMcp } from '../activities/mcp/pool';
import type { ToolContext } from '../activities/tool';
import { eventually } from './support/scenario';
import { RECORDER, mcpBin, recorderEvents } from './support/mcpServers';
import { runCli } from './support/processes';

// Real MCP servers nobody here wrote (@modelcontextprotocol/server-filesystem, server-everything),
// over stdio: their tools listed, each with the policy its annotations and the config give it.

describe('MCP servers: tools and their policies (real servers over stdio)', function () {
  this.timeout(60_000);
  let dir: string;
  const clients: Client[] = [];
  before(() => (dir = mkdtempSync(join(tmpdir(), 'openworker-mcp-'))));
  after(async () => {
    for (const c of clients) await c.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('server-filesystem: reads run unasked, writes ask; the config overrides a hint and denies a tool', async () => {
    const [fs] = parseMcpConfig(
      {
        servers: {
          files: {
            command: process.execPath,
            args: [mcpBin('mcp-server-filesystem'), dir],
            // The server calls write_file idempotent; here a second write must never happen unasked.
            tools: { write_file: { recovery: 'manual', target: 'path' }, move_file: { deny: true } },
          },
        },
      },
      'test',
      process.env,
    );
    const client = await connectMcp(fs!);
    clients.push(client);
    const tools = await listMcpTools(fs!, client);
    const by = (name: string) => tools.find((t) => t.tool === name)!;
    assert.ok(tools.length >= 10, tools.map((t) => t.tool).join(' '));
    assert.deepEqual(
      [
        by('read_text_file').policy.effect,
        by('read_text_file').policy.requiresApproval,
        by('read_text_file').policy.name,
      ],
      ['read', false, 'files__read_text_file'],
    );
    const write = by('write_file');
    assert.equal(write.annotations.idempotentHint, true, 'the server says so');
    assert.deepEqual(
      [
        write.policy.effect,
        write.policy.requiresApproval,
        write.policy.recovery,
        write.policy.from.recovery,
        write.policy.target,
      ],
      ['external', true, 'manual', 'config', 'path'],
    );
    assert.equal(by('edit_file').policy.recovery, 'manual');
    assert.equal(by('move_file').policy.denied, true);
    assert.equal((write.inputSchema as { type?: string }).type, 'object');
  });

  it('server-everything: annotations as the server gives them, unless the server is not trusted', async () => {
    const config = (trustAnnotations: boolean) =>
      parseMcpConfig(
        {
          servers: {
            ev: { command: process.execPath, args: [mcpBin('mcp-server-everything'), 'stdio'], trustAnnotations },
          },
        },
        'test',
        process.env,
      )[0]!;
    const client = await connectMcp(config(true));
    clients.push(client);
    const trusted = await listMcpTools(config(true), client);
    const echo = trusted.find((t) => t.tool === 'echo')!;
    assert.deepEqual([echo.policy.effect, echo.policy.requiresApproval], ['read', false]);
    const untrusted = await listMcpTools(config(false), client);
    const echoUntrusted = untrusted.find((t) => t.tool === 'echo')!;
    assert.deepEqual([echoUntrusted.policy.effect, echoUntrusted.policy.requiresApproval], ['external', true]);
  });

  it('mcp check: each tool with what it gets and where that came from; errors in one line', async () => {
    const file = join(dir, 'check.json');
    writeFileSync(
      file,
      JSON.stringify({
        servers: {
          files: {
            command: process.execPath,
            args: [mcpBin('mcp-server-filesystem'), dir],
            tools: { write_file: { recovery: 'manual' }, move_file: { deny: true } },
          },
        },
      }),
    );
    const ok = await runCli(['mcp', 'check', '--mcp', file]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /^files\/read_text_file +as files__read_text_file: read \(annotation\), runs unasked$/m);
    assert.match(
      ok.stdout,
      /^files\/write_file +as files__write_file: external \(default\), asks for approval, recovery manual \(config\)$/m,
    );
    assert.match(ok.stdout, /^files\/move_file +denied by the config$/m);
    const json = JSON.parse((await runCli(['--json', 'mcp', 'check', '--mcp', file])).stdout) as { tools: unknown[] };
    assert.ok(json.tools.length >= 10);
    const none = await runCli(['mcp', 'check'], { env: { OPENWORKER_MCP: '' } });
    assert.deepEqual([none.code, none.stderr], [2, 'error: mcp check: give --mcp <file> or set OPENWORKER_MCP\n']);
    const bad = await runCli(['mcp', 'check', '--mcp', join(dir, 'nope.json')]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^error: MCP config .*nope\.json: ENOENT/);
  });

  it('a server that does not start: one line naming it', async () => {
    const [bad] = parseMcpConfig({ servers: { gone: { command: join(dir, 'no-such-binary') } } }, 'test', process.env);
    await assert.rejects(
      connectMcp(bad!),
      /^Error: MCP server 'gone' \('.*no-such-binary'\) did not start or answer: /,
    );
  });

  it('a server that turns the start away: the start fails with why, and no line says a next call will reopen it', async () => {
    // What an OAuth-only server does without a token (the conformance suite's auth scenarios).
    const http = createServer((_req, res) => res.writeHead(401, { 'content-type': 'application/json' }).end('{}'));
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
      const lines: string[] = [];
      await assert.rejects(
        startMcp(parseMcpConfig({ servers: { locked: { url } } }, 'test', process.env), { log: (l) => lines.push(l) }),
        /MCP server 'locked' \(http:.*\) did not start or answer: Streamable HTTP error/,
      );
      assert.deepEqual(lines, []);
    } finally {
      http.close();
    }
  });
});

describe('MCP connections: one per server, lent to every call (the recorder over stdio)', function () {
  this.timeout(60_000);
  let dir: string;
  let logFile: string;
  let set: McpToolSet | undefined;
  const lines: string[] = [];
  const events = () => recorderEvents(logFile);
  const ctx = (n: number): ToolContext => ({
    executionId: `owx-${n}`,
    attempt: 1,
    sessionId: 's',
    turn: 1,
    toolCallId: `c${n}`,
    signal: new AbortController().signal,
    heartbeat: () => undefined,
  });
  const start = async () => {
    const configs = parseMcpConfig(
      { servers: { rec: { command: process.execPath, args: [RECORDER], env: { RECORDER_LOG: logFile } } } },
      'test',
      process.env,
    );
    set = await startMcp(configs, { log: (l) => lines.push(l) });
    const tool = (name: string) => set!.tools().find((t) => t.name === `rec__${name}`)!;
    return tool;
  };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'openworker-mcpc-'));
    logFile = join(dir, 'log.jsonl');
    lines.length = 0;
  });
  afterEach(async () => {
    await set?.close();
    set = undefined;
    rmSync(dir, { recursive: true, force: true });
  });
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  it('a server that died: the next calls, side by side, share one new connection', async () => {
    const tool = await start();
    assert.equal(await tool('note').execute({ text: 'one' }, ctx(1)), 'noted: one');
    const first = events().find((e) => e.event === 'started')!.pid as number;
    process.kill(first, 'SIGKILL');
    await eventually(async () => lines.some((l) => /connection closed/.test(l)), 'the pool sees the close');
    const results = await Promise.all([2, 3, 4].map((n) => tool('note').execute({ text: `n${n}` }, ctx(n))));
    assert.deepEqual(results, ['noted: n2', 'noted: n3', 'noted: n4']);
    const started = events().filter((e) => e.event === 'started');
    assert.equal(started.length, 2, 'one new server process, not one per call');
    const notes = events().filter((e) => e.event === 'note');
    assert.deepEqual(
      notes.map((e) => [e.executionId, e.pid]),
      [['owx-1', first], ...[2, 3, 4].map((n) => [`owx-${n}`, started[1]!.pid])].sort(),
    );
  });

  it("a server's stderr is read as it writes (half a megabyte does not block it) and logged by line", async () => {
    const tool = await start();
    assert.equal(await tool('shout').execute({}, ctx(1)), 'shouted');
    assert.ok(
      lines.some((l) => l === `mcp rec stderr: ${'x'.repeat(200)}`),
      lines.slice(0, 3).join('\n'),
    );
    assert.ok(
      lines.every((l) => l.length <= 320),
      'each line is cut',
    );
  });

  it('a changed list the worker refuses leaves the last accepted one', async () => {
    const tool = await start();
    const offered: string[][] = [];
    set!.onChange((tools) => {
      offered.push(tools.map((t) => t.name));
      return false;
    });
    assert.equal(await tool('unlock').execute({}, ctx(1)), 'unlocked');
    await eventually(async () => offered.length > 0, 'the new list is offered');
    assert.ok(offered[0]!.includes('rec__extra'));
    assert.ok(!set!.tools().some((t) => t.name === 'rec__extra'), 'the refused list is not kept');
    assert.ok(!set!.listed().some((t) => t.tool === 'extra'));
  });

  it('close() ends the server process', async () => {
    await start();
    const pid = events().find((e) => e.event === 'started')!.pid as number;
    await set!.close();
    await eventually(async () => !alive(pid), 'the server exits');
  });
});
