import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseMcpConfig, type McpServerConfig } from '../../activities/mcp/config';
import { policyFor, registryName, type McpAnnotations } from '../../activities/mcp/policy';

// MCP tools: annotations are the server's hints, the config is the operator's word and wins.

const server = (extra: Partial<McpServerConfig> = {}): McpServerConfig =>
  ({ name: 'files', transport: 'stdio', command: 'x', ...extra }) as McpServerConfig;

describe('MCP: policy from annotations and config', () => {
  const cases: [string, McpServerConfig, McpAnnotations, Partial<ReturnType<typeof policyFor>>][] = [
    [
      'no annotations: external, asked, manual',
      server(),
      {},
      { effect: 'external', requiresApproval: true, recovery: 'manual' },
    ],
    ['readOnlyHint: a read, not asked', server(), { readOnlyHint: true }, { effect: 'read', requiresApproval: false }],
    [
      'idempotentHint: retried with its key',
      server(),
      { idempotentHint: true },
      { effect: 'external', requiresApproval: true, recovery: 'idempotent' },
    ],
    [
      'destructiveHint alone changes nothing',
      server(),
      { destructiveHint: true },
      { effect: 'external', recovery: 'manual' },
    ],
    ['a server that dedupes by execution ID: idempotent', server({ dedupes: true }), {}, { recovery: 'idempotent' }],
    [
      'config says external: a readOnlyHint cannot make it a read',
      server({ tools: { write_file: { effect: 'external' } } }),
      { readOnlyHint: true },
      { effect: 'external', requiresApproval: true },
    ],
    [
      'config says manual: an idempotentHint cannot make it retried',
      server({ defaults: { recovery: 'manual' } }),
      { idempotentHint: true },
      { recovery: 'manual' },
    ],
    [
      'trustAnnotations false: hints ignored',
      server({ trustAnnotations: false }),
      { readOnlyHint: true },
      { effect: 'external', requiresApproval: true },
    ],
    [
      'a tool entry overrides the server defaults',
      server({ defaults: { approval: true }, tools: { write_file: { approval: false, target: 'path' } } }),
      {},
      { requiresApproval: false, target: 'path' },
    ],
    ['deny', server({ tools: { write_file: { deny: true } } }), {}, { denied: true }],
    ['a configured name', server({ tools: { write_file: { name: 'save' } } }), {}, { name: 'save' }],
  ];
  for (const [name, s, hints, want] of cases)
    it(name, () => {
      const p = policyFor(s, 'write_file', hints);
      for (const [k, v] of Object.entries(want))
        assert.deepEqual(p[k as keyof typeof p], v, `${k}: ${JSON.stringify(p)}`);
    });

  it('registry names: <server>__<tool>, characters a provider refuses replaced, at most 64', () => {
    assert.equal(registryName('files', 'write_file'), 'files__write_file');
    assert.equal(registryName('gh', 'repos/get.content'), 'gh__repos_get_content');
    assert.equal(registryName('s', 'x'.repeat(80)).length, 64);
  });
});

describe('MCP: the config file', () => {
  const env = { GH_TOKEN: 'secret-token', HOME: '/home/w' };
  it('stdio and Streamable HTTP servers, ${VAR} read from the environment', () => {
    const [files, gh] = parseMcpConfig(
      {
        servers: {
          files: { command: 'npx', args: ['-y', 'server-filesystem', '/data'], env: { HOME: '${HOME}' } },
          gh: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer ${GH_TOKEN}' }, dedupes: true },
        },
      },
      'mcp.json',
      env,
    );
    assert.deepEqual(files, {
      name: 'files',
      transport: 'stdio',
      command: 'npx',
      args: ['-y', 'server-filesystem', '/data'],
      env: { HOME: '/home/w' },
    });
    assert.equal(gh!.transport, 'http');
    assert.deepEqual((gh as { headers?: Record<string, string> }).headers, { Authorization: 'Bearer secret-token' });
  });

  const bad: [string, unknown, RegExp][] = [
    ['no servers', {}, /MCP config mcp\.json: servers: /],
    [
      'neither command nor url',
      { servers: { a: { args: [] } } },
      /servers\.a: give "command" \(a stdio server\) or "url" \(Streamable HTTP\)$/,
    ],
    [
      'a bad effect',
      { servers: { a: { command: 'x', tools: { t: { effect: 'write' } } } } },
      /servers\.a\.tools\.t\.effect/,
    ],
    ['an unknown field', { servers: { a: { command: 'x', recover: 'manual' } } }, /servers\.a/],
    ['a url that is not http(s)', { servers: { a: { url: 'file:///etc/passwd' } } }, /servers\.a/],
    [
      'an unset variable',
      { servers: { a: { url: 'http://x/mcp', headers: { A: '${NOPE}' } } } },
      /servers\.a\.headers\.A uses \$\{NOPE\}, which is not set in the worker's environment$/,
    ],
  ];
  for (const [name, raw, why] of bad)
    it(`refuses ${name} in one line`, () => assert.throws(() => parseMcpConfig(raw, 'mcp.json', env), why));
});

describe('MCP: the config in docs/mcp.md', () => {
  it('parses, and gives the policies the page describes', () => {
    const page = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'mcp.md'), 'utf8');
    const block = /```json\n([\s\S]*?)\n```/.exec(page)?.[1];
    assert.ok(block, 'a json block on the page');
    const [files, tickets] = parseMcpConfig(JSON.parse(block), 'docs/mcp.md', { TICKETS_TOKEN: 't0k' });
    assert.equal(files!.transport, 'stdio');
    assert.equal(tickets!.transport === 'http' && tickets!.headers?.Authorization, 'Bearer t0k');
    const write = policyFor(files!, 'write_file', { idempotentHint: true });
    assert.deepEqual([write.recovery, write.target], ['manual', 'path'], 'the config overrides the hint');
    assert.equal(policyFor(files!, 'move_file').denied, true);
    const ticket = policyFor(tickets!, 'create_ticket');
    assert.deepEqual([ticket.effect, ticket.recovery, ticket.timeoutMs], ['external', 'idempotent', 30_000]);
  });
});
