import { appendFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

// A small MCP server of our own, over stdio, that writes what it sees to $RECORDER_LOG (one JSON line
// per event): the `_meta` of every call, the calls it holds, and the cancellations it receives. The
// MCP tests read that log to tell what reached the server; test/mcp.test.ts runs it as a worker's
// MCP server. `node dist/test/support/mcpRecorder.js`.

const log = (event: Record<string, unknown>): void =>
  appendFileSync(process.env.RECORDER_LOG!, JSON.stringify({ pid: process.pid, ...event }) + '\n');

const server = new McpServer({ name: 'recorder', version: '1.0.0' });
const meta = (extra: { _meta?: Record<string, unknown> }) => ({
  executionId: extra._meta?.['openworker/executionId'],
  attempt: extra._meta?.['openworker/attempt'],
  // W3C trace context, when the worker traces (test/otel.test.ts).
  traceparent: extra._meta?.traceparent,
});

server.registerTool(
  'note',
  { description: 'Writes a note (a side effect, no hints).', inputSchema: { text: z.string() } },
  async ({ text }, extra) => {
    log({ event: 'note', text, ...meta(extra) });
    return { content: [{ type: 'text', text: `noted: ${text}` }] };
  },
);

// Takes its time, so a test can stop the worker while the call is in flight.
server.registerTool(
  'slow_note',
  { description: 'Writes a note after 1.5 s.', inputSchema: { text: z.string() } },
  async ({ text }, extra) => {
    log({ event: 'received', tool: 'slow_note', ...meta(extra) });
    await new Promise((r) => setTimeout(r, 1_500));
    log({ event: 'note', text, ...meta(extra) });
    return { content: [{ type: 'text', text: `noted: ${text}` }] };
  },
);

// Never answers: the test kills this server (SIGKILL) or cancels the call while it waits.
const hold = async (tool: string, extra: { _meta?: Record<string, unknown>; signal: AbortSignal }) => {
  log({ event: 'received', tool, ...meta(extra) });
  await new Promise<void>((resolve) => extra.signal.addEventListener('abort', () => resolve(), { once: true }));
  log({ event: 'cancelled', tool, ...meta(extra), reason: String(extra.signal.reason ?? '') });
  return { content: [{ type: 'text' as const, text: 'cancelled' }] };
};
server.registerTool(
  'hold',
  { description: 'A side effect that never finishes.', inputSchema: { label: z.string() } },
  (_args, extra) => hold('hold', extra),
);
server.registerTool(
  'slow_lookup',
  {
    description: 'A read that never finishes.',
    inputSchema: { query: z.string() },
    annotations: { readOnlyHint: true },
  },
  (_args, extra) => hold('slow_lookup', extra),
);

// Adds a tool while connected: the SDK sends notifications/tools/list_changed.
server.registerTool(
  'unlock',
  { description: 'Adds the tool "extra".', inputSchema: {}, annotations: { readOnlyHint: true } },
  async () => {
    server.registerTool(
      'extra',
      { description: 'Exists after unlock.', inputSchema: { n: z.number() }, annotations: { readOnlyHint: true } },
      async ({ n }) => ({ content: [{ type: 'text', text: `extra ${n * 2}` }] }),
    );
    log({ event: 'unlocked' });
    return { content: [{ type: 'text', text: 'unlocked' }] };
  },
);

// Half a megabyte on stderr, then an answer: the worker must keep reading it or the server blocks.
server.registerTool(
  'shout',
  { description: 'Writes a lot to stderr.', inputSchema: {}, annotations: { readOnlyHint: true } },
  async () => {
    await new Promise<void>((resolve) =>
      process.stderr.write('x'.repeat(200) + '\n'.repeat(1) + 'y'.repeat(512 * 1024) + '\n', () => resolve()),
    );
    return { content: [{ type: 'text', text: 'shouted' }] };
  },
);

log({ event: 'started' });
void server.connect(new StdioServerTransport());
