import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { parseMcpConfig } from '../activities/mcp/config';
import { connectMcp, listMcpTools } from '../activities/mcp/servers';
import { ROOT } from './support/processes';

// Real MCP servers nobody here wrote (@modelcontextprotocol/server-filesystem, server-everything),
// over stdio: their tools listed, each with the policy its annotations and the config give it.

const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);

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
            args: [bin('mcp-server-filesystem'), dir],
            // The server calls write_file idempotent; here a second write must never happen unasked.
            tools: { write_file: { recovery: 'manual', target: 'path' }, move_file: { deny: true } },
          },
        },
      },
      'test',
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
            ev: { command: process.execPath, args: [bin('mcp-server-everything'), 'stdio'], trustAnnotations },
          },
        },
        'test',
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

  it('a server that does not start: one line naming it', async () => {
    const [bad] = parseMcpConfig({ servers: { gone: { command: join(dir, 'no-such-binary') } } }, 'test');
    await assert.rejects(
      connectMcp(bad!),
      /^Error: MCP server 'gone' \('.*no-such-binary'\) did not start or answer: /,
    );
  });
});
