import { strict as assert } from 'node:assert';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  LATEST_PROTOCOL_VERSION,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { describeIssues, createRegistry } from '../../activities/registry';
import { inputFromJsonSchema } from '../../activities/mcp/schema';
import { policyFor } from '../../activities/mcp/policy';
import type { McpServerConfig } from '../../activities/mcp/config';
import type { McpTool } from '../../activities/mcp/servers';
import { describeMcpTools } from '../../activities/mcp/servers';
import { EXECUTION_ID_META, callMcpTool, toolFromMcp } from '../../activities/mcp/tools';
import { classifyCallError, valueOf } from '../../activities/mcp/outcomes';
import type { ToolContext } from '../../activities/tool';
import { ToolFailure, UnknownOutcome, defineTool } from '../../activities/tool';

// MCP tools in process: JSON Schemas as tool inputs, and how each kind of answer from a real MCP
// server (the SDK's McpServer over its in-memory transport) becomes an outcome.

const issuesOf = (schema: Record<string, unknown>, value: unknown): string => {
  const r = inputFromJsonSchema(schema).safeParse(value);
  return r.success ? 'ok' : describeIssues(r.error);
};

describe('MCP: JSON Schema inputs', () => {
  const object = {
    type: 'object',
    properties: { path: { type: 'string' }, opts: { type: 'object', properties: { n: { type: 'integer' } } } },
    required: ['path'],
    additionalProperties: false,
  };
  const cases: [string, Record<string, unknown>, unknown, string][] = [
    ['valid', object, { path: 'a' }, 'ok'],
    ['a missing field is named', object, {}, 'path: required'],
    ['a wrong type, nested', object, { path: 'a', opts: { n: 1.5 } }, 'opts.n: must be integer'],
    ['an extra field', object, { path: 'a', x: 1 }, 'x: not allowed'],
    ['not an object', object, 'a', '(input): must be object'],
    [
      'draft 2020-12 with $defs and $ref',
      {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        $defs: { p: { type: 'string', minLength: 2 } },
        type: 'object',
        properties: { p: { $ref: '#/$defs/p' } },
      },
      { p: 'x' },
      'p: must NOT have fewer than 2 characters',
    ],
    [
      'formats are checked',
      { type: 'object', properties: { u: { type: 'string', format: 'uri' } } },
      { u: 'no' },
      'u: must match format "uri"',
    ],
  ];
  for (const [name, schema, value, expected] of cases) it(name, () => assert.equal(issuesOf(schema, value), expected));

  it('patterns run on RE2: a catastrophic pattern answers at once', () => {
    const schema = { type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } };
    const started = Date.now();
    assert.equal(issuesOf(schema, { s: 'a'.repeat(40) + 'b' }), 's: must match pattern "^(a+)+$"');
    assert.ok(Date.now() - started < 1000, `${Date.now() - started} ms`);
    assert.equal(issuesOf(schema, { s: 'aaa' }), 'ok');
  });

  it('a pattern RE2 cannot run is left to the server', () => {
    assert.equal(issuesOf({ type: 'object', properties: { s: { pattern: '^(?!x)' } } }, { s: 'x' }), 'ok');
  });

  it('a schema that refers to itself forever: an issue, not an exception', () => {
    assert.match(issuesOf({ $ref: '#' }, {}), /^\(input\): the server's schema cannot check them: /);
  });

  it('draft-07 when the schema says so; a schema that refers to itself by $id', () => {
    const d7 = { $schema: 'http://json-schema.org/draft-07/schema#', type: 'array', items: [{ type: 'string' }] };
    assert.equal(issuesOf(d7, [1]), '0: must be string');
    const byId = {
      $id: 'https://example.com/tree',
      type: 'object',
      properties: { child: { $ref: 'https://example.com/tree#/$defs/leaf' } },
      $defs: { leaf: { type: 'integer' } },
    };
    assert.equal(issuesOf(byId, { child: 'x' }), 'child: must be integer');
  });

  it('a schema that cannot compile is refused in one line', () => {
    assert.throws(
      () => inputFromJsonSchema({ type: 'object', properties: { a: { $ref: '#/nowhere' } } }),
      /^Error: its input schema cannot be used: can't resolve reference #\/nowhere/,
    );
  });

  it('two servers may use one $id for different schemas', () => {
    const a = inputFromJsonSchema({ $id: 'https://example.com/x', type: 'object', required: ['a'] });
    const b = inputFromJsonSchema({ $id: 'https://example.com/x', type: 'object', required: ['b'] });
    assert.equal(a.safeParse({ a: 1 }).success, true);
    assert.equal(b.safeParse({ a: 1 }).success, false);
  });
});

describe('MCP: a failed call, classified', () => {
  const refused = { outcome: 'refused', broken: false };
  const notSent = { outcome: 'not_sent', broken: true };
  const unknown = (broken: boolean) => ({ outcome: 'unknown', broken });
  const fetchFailed = (code: string) => Object.assign(new TypeError('fetch failed'), { cause: { code } });
  const cases: [string, unknown, boolean, object][] = [
    ['no such tool', new McpError(ErrorCode.MethodNotFound, 'x'), false, refused],
    ['invalid params', new McpError(ErrorCode.InvalidParams, 'x'), false, refused],
    [
      'invalid params for the result (the tool ran)',
      new McpError(ErrorCode.InvalidParams, 'Invalid tools/call result: [...]'),
      false,
      unknown(false),
    ],
    ['a server error', new McpError(ErrorCode.InternalError, 'x'), false, unknown(false)],
    ['our request timeout', new McpError(ErrorCode.RequestTimeout, 'x'), false, unknown(false)],
    ['the connection closed mid-call', new McpError(ErrorCode.ConnectionClosed, 'x'), false, unknown(true)],
    ['our own abort', new Error('turn cancelled'), true, unknown(false)],
    ['a connection already closed', new Error('Not connected'), false, notSent],
    ['an HTTP server that forgot the session', new StreamableHTTPError(404, 'Not Found'), false, notSent],
    [
      'an HTTP server that turns the POST away (400)',
      new StreamableHTTPError(400, 'No valid session ID'),
      false,
      notSent,
    ],
    ['an HTTP server that answers 500', new StreamableHTTPError(500, 'boom'), false, unknown(true)],
    ['connection refused', fetchFailed('ECONNREFUSED'), false, notSent],
    ['connection reset', fetchFailed('ECONNRESET'), false, unknown(true)],
    ['a result that does not parse', Object.assign(new Error('bad'), { issues: [] }), false, unknown(false)],
    ['an HTTP 409 from a proxy that forwarded it', new StreamableHTTPError(409, 'conflict'), false, unknown(true)],
    ['an HTTP 429', new StreamableHTTPError(429, 'slow down'), false, notSent],
    ['a closed pipe', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }), false, unknown(true)],
  ];
  for (const [name, err, aborted, expected] of cases)
    it(name, () => assert.deepEqual(classifyCallError(err, aborted), expected));
});

describe('MCP: what the model sees of a result', () => {
  const cases: [string, CallToolResult, unknown][] = [
    [
      'text blocks, joined',
      {
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
      'a\nb',
    ],
    ['structured content first', { content: [{ type: 'text', text: '{}' }], structuredContent: { n: 1 } }, { n: 1 }],
    [
      'other blocks, as they are',
      { content: [{ type: 'image', data: 'AA==', mimeType: 'image/png' }] },
      [{ type: 'image', data: 'AA==', mimeType: 'image/png' }],
    ],
  ];
  for (const [name, result, expected] of cases) it(name, () => assert.deepEqual(valueOf(result), expected));
});

describe('MCP: answers become outcomes (a real McpServer, in memory)', () => {
  const seen: Record<string, unknown>[] = [];
  let client: Client;
  let server: McpServer;
  let release: () => void = () => undefined;
  const config = { name: 'mem', transport: 'stdio', command: 'x' } as McpServerConfig;
  const listed = (tool: string, schema: Record<string, unknown> = { type: 'object' }): McpTool => ({
    server: 'mem',
    tool,
    description: tool,
    inputSchema: schema,
    annotations: {},
    policy: policyFor(config, tool),
  });
  const ctx = (signal = new AbortController().signal): ToolContext => ({
    executionId: 'owx-0123',
    attempt: 2,
    sessionId: 's',
    turn: 1,
    toolCallId: 'c1',
    signal,
    heartbeat: () => undefined,
  });
  const call = (tool: string, args: Record<string, unknown> = {}, signal?: AbortSignal) =>
    callMcpTool(async () => ({ client, release: () => undefined }), listed(tool), args, ctx(signal));

  beforeEach(async () => {
    server = new McpServer({ name: 'mem', version: '1' });
    server.registerTool('ok', { inputSchema: { n: z.number().optional() } }, async (args, extra) => {
      seen.push({ args, meta: extra._meta });
      return { content: [{ type: 'text', text: 'done' }] };
    });
    server.registerTool('fails', {}, async () => ({
      isError: true,
      content: [{ type: 'text', text: 'card declined' }],
    }));
    server.registerTool('badOutput', { outputSchema: { n: z.number() } }, async () => ({
      content: [{ type: 'text', text: 'applied' }],
    }));
    server.registerTool('throws', {}, async (): Promise<CallToolResult> => {
      throw new McpError(ErrorCode.InternalError, 'db down');
    });
    server.registerTool('waits', {}, (extra) => {
      seen.push({ waiting: true });
      return new Promise((resolve) => {
        release = () => resolve({ content: [{ type: 'text', text: 'late' }] });
        extra.signal.addEventListener('abort', () => seen.push({ cancelled: true }));
      });
    });
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(a);
    client = new Client({ name: 't', version: '1' });
    await client.connect(b);
    seen.length = 0;
  });
  afterEach(async () => {
    release();
    await client.close();
    await server.close();
  });

  it('a result: its text; the execution ID and attempt travel in _meta', async () => {
    assert.equal(await call('ok', { n: 1 }), 'done');
    assert.deepEqual(seen[0]!.args, { n: 1 });
    const meta = seen[0]!.meta as Record<string, unknown>;
    assert.deepEqual([meta[EXECUTION_ID_META], meta['openworker/attempt']], ['owx-0123', 2]);
  });

  it('isError: a definite failure with the server’s text', async () => {
    await assert.rejects(call('fails'), (e: Error) => e instanceof ToolFailure && e.message === 'card declined');
  });

  it('an unknown tool or invalid params: a definite failure', async () => {
    await assert.rejects(call('nope'), (e: Error) => e instanceof ToolFailure && /Tool nope not found/.test(e.message));
    await assert.rejects(call('ok', { n: 'x' }), (e: Error) => e instanceof ToolFailure && /n/.test(e.message));
  });

  it('isError from the server’s own output check, made after the tool ran: unknown outcome', async () => {
    await assert.rejects(
      call('badOutput'),
      (e: Error) =>
        e instanceof UnknownOutcome &&
        /answered an error after the tool ran: .*Output validation error/.test(e.message),
    );
  });

  it('errorResult: unknown makes every isError an unknown outcome', async () => {
    const t = listed('fails');
    const lenient = { ...t, policy: { ...t.policy, errorResult: 'unknown' as const } };
    await assert.rejects(
      callMcpTool(async () => ({ client, release: () => undefined }), lenient, {}, ctx()),
      (e: Error) => e instanceof UnknownOutcome && /card declined/.test(e.message),
    );
  });

  it('a tool that throws: McpServer answers isError, a definite failure', async () => {
    await assert.rejects(call('throws'), (e: Error) => e instanceof ToolFailure && /db down/.test(e.message));
  });

  /** Calls tool 'x' on a low-level SDK Server whose tools/call handler is `handler`; the call's error. */
  const errorFromLowLevel = async (handler: () => unknown): Promise<Error> => {
    const low = new Server({ name: 'low', version: '1' }, { capabilities: { tools: {} } });
    low.setRequestHandler(CallToolRequestSchema, handler as never);
    const [a, b] = InMemoryTransport.createLinkedPair();
    await low.connect(a);
    const c = new Client({ name: 't', version: '1' });
    await c.connect(b);
    try {
      const r = await callMcpTool(async () => ({ client: c, release: () => undefined }), listed('x'), {}, ctx()).then(
        () => undefined,
        (e: Error) => e,
      );
      assert.ok(r, 'the call failed');
      return r;
    } finally {
      await c.close();
      await low.close();
    }
  };

  it('a JSON-RPC error other than a refusal: unknown outcome', async () => {
    const e = await errorFromLowLevel(() => {
      throw new McpError(ErrorCode.InternalError, 'db down mid-write');
    });
    assert.ok(
      !(e instanceof ToolFailure) && /MCP server 'mem', tool 'x': .*db down mid-write/.test(e.message),
      e.message,
    );
  });

  /** A client connected to a bare peer that answers initialize properly and tools/call with `result`. */
  const peerAnswering = async (result: unknown): Promise<Client> => {
    const [a, b] = InMemoryTransport.createLinkedPair();
    a.onmessage = (m) => {
      const msg = m as { id?: number; method?: string };
      if (msg.id === undefined) return;
      const answer =
        msg.method === 'initialize'
          ? {
              protocolVersion: LATEST_PROTOCOL_VERSION,
              capabilities: { tools: {} },
              serverInfo: { name: 'p', version: '1' },
            }
          : result;
      void a.send({ jsonrpc: '2.0', id: msg.id, result: answer } as never);
    };
    await a.start();
    const c = new Client({ name: 't', version: '1' });
    await c.connect(b);
    return c;
  };

  it('a result that does not parse: unknown outcome, and the connection is kept', async () => {
    const c = await peerAnswering({ content: 'not a list' });
    const releases: unknown[] = [];
    try {
      await assert.rejects(
        callMcpTool(async () => ({ client: c, release: (o) => releases.push(o) }), listed('x'), {}, ctx()),
        (e: Error) => !(e instanceof ToolFailure) && /MCP server 'mem', tool 'x'/.test(e.message),
      );
      assert.deepEqual(releases, [{ broken: false }]);
    } finally {
      await c.close();
    }
  });

  it('"invalid params" for the result the tool returned (the SDK server’s own check): unknown outcome', async () => {
    const e = await errorFromLowLevel(() => ({ content: 'not a list' }));
    assert.ok(!(e instanceof ToolFailure) && /Invalid tools\/call result/.test(e.message), e.message);
  });

  it('the connection closes mid-call: unknown outcome', async () => {
    const pending = call('waits');
    await new Promise((r) => setTimeout(r, 20));
    await server.close();
    await assert.rejects(
      pending,
      (e: Error) => !(e instanceof ToolFailure) && /MCP server 'mem'.*closed/i.test(e.message),
    );
  });

  it('aborting sends notifications/cancelled and ends as unknown', async () => {
    const stop = new AbortController();
    const pending = call('waits', {}, stop.signal);
    await new Promise((r) => setTimeout(r, 20));
    stop.abort('turn cancelled');
    await assert.rejects(pending, (e: Error) => !(e instanceof ToolFailure));
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(seen, [{ waiting: true }, { cancelled: true }]);
  });

  it('no connection: not sent, a definite failure for a protected call', async () => {
    const t = listed('ok');
    await assert.rejects(
      callMcpTool(() => Promise.reject(new Error('spawn ENOENT')), t, {}, ctx()),
      (e: Error) => e instanceof ToolFailure && e.message === 'not sent: spawn ENOENT',
    );
  });
});

describe('MCP: tools in the registry', () => {
  const config = { name: 'mem', transport: 'stdio', command: 'x' } as McpServerConfig;
  const mcp = (tool: string, annotations = {}): McpTool => ({
    server: 'mem',
    tool,
    description: `does ${tool}`,
    inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
    annotations,
    policy: policyFor({ ...config, tools: { send: { target: 'to' }, drop: { deny: true } } }, tool, annotations),
  });
  const source = () => Promise.reject(new Error('unused'));

  it('the model sees the server’s schema; the plan carries the policy and the target', () => {
    const reg = createRegistry([toolFromMcp(mcp('send'), source)!]);
    assert.deepEqual(reg.descriptors()[0]!.inputSchema, mcp('send').inputSchema);
    const [planned] = reg.plan([{ id: 'c1', name: 'mem__send', arguments: { to: 'bob' } }]);
    assert.deepEqual([planned!.spec!.effect, planned!.spec!.recovery, planned!.target], ['external', 'manual', 'bob']);
    const [bad] = reg.plan([{ id: 'c2', name: 'mem__send', arguments: {} }]);
    assert.equal(bad!.invalid, "invalid arguments for 'mem__send': to: required");
  });

  it('a denied tool is not a tool', () => assert.equal(toolFromMcp(mcp('drop'), source), undefined));

  it('setTools swaps the set; a clash keeps the old one', () => {
    const own = defineTool({ name: 'mem__look', description: 'd', input: z.object({}), execute: () => 1 });
    const reg = createRegistry([own]);
    reg.setTools([own, toolFromMcp(mcp('send'), source)!]);
    assert.deepEqual(reg.names(), ['mem__look', 'mem__send']);
    assert.throws(() => reg.setTools([own, toolFromMcp(mcp('look'), source)!]), /two tools are named 'mem__look'/);
    assert.deepEqual(reg.names(), ['mem__look', 'mem__send']);
  });

  it('the start-up line names each tool with its policy', () => {
    const listed = [mcp('send'), mcp('look', { readOnlyHint: true }), mcp('drop'), mcp('odd')];
    const lines = describeMcpTools(listed, new Set(['mem__send', 'mem__look']));
    assert.deepEqual(lines, [
      'mcp mem: 4 tools: mem__send (asks, manual), mem__look (read), drop (denied), mem__odd (left out)',
    ]);
  });
});
