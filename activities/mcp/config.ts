import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { Env } from '../../runtime/config';

// The worker's MCP servers (`worker --mcp FILE`, docs/mcp.md): how to reach each server and how
// its tools are governed. Secrets never sit in the file: `${VAR}` in env and headers is read from the
// worker's environment. Everything here is checked at start, with one line naming what is wrong.

const ToolOverride = z
  .object({
    /** The registry name (default `<server>__<tool>`). */
    name: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,64}$/, "letters, digits, '_' or '-', at most 64")
      .optional(),
    deny: z.boolean().optional(),
    effect: z.enum(['read', 'external']).optional(),
    approval: z.boolean().optional(),
    recovery: z.enum(['manual', 'idempotent']).optional(),
    /** The argument that names what is acted on (a path, a recipient): summaries and per-target grants. */
    target: z.string().min(1).optional(),
    timeoutMs: z.number().int().positive().optional(),
    heartbeatMs: z.number().int().positive().optional(),
    /** Reads only: false runs the read as an activity of its own (a cancel reaches it within a heartbeat). */
    local: z.boolean().optional(),
    /** What an `isError: true` result means: failed (default, as MCP says), or unknown for a tool that may fail after it acted. */
    errorResult: z.enum(['failed', 'unknown']).optional(),
  })
  .strict();
export type ToolOverride = z.infer<typeof ToolOverride>;

const common = {
  /** The server deduplicates by the execution ID it receives in `_meta`: its external tools are `idempotent`. */
  dedupes: z.boolean().optional(),
  /** Whether the server's annotations (readOnlyHint, idempotentHint) may set policy at all. Default true. */
  trustAnnotations: z.boolean().optional(),
  /** Applied to every tool of the server, under each tool's own entry. */
  defaults: ToolOverride.omit({ name: true }).optional(),
  tools: z.record(z.string(), ToolOverride).optional(),
};

const Stdio = z
  .object({
    command: z.string().min(1),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
    ...common,
  })
  .strict();
const Http = z
  .object({ url: z.url({ protocol: /^https?$/ }), headers: z.record(z.string(), z.string()).optional(), ...common })
  .strict();

const ConfigFile = z
  .object({
    servers: z.record(
      z.string().regex(/^[A-Za-z0-9_-]{1,32}$/, "server names: letters, digits, '_' or '-', at most 32"),
      z.record(z.string(), z.unknown()),
    ),
  })
  .strict();

export type StdioServer = z.infer<typeof Stdio> & { name: string; transport: 'stdio' };
export type HttpServer = z.infer<typeof Http> & { name: string; transport: 'http' };
export type McpServerConfig = StdioServer | HttpServer;

/** `${VAR}` from the environment; an unset variable is an error, not an empty secret. */
export function expand(value: string, where: string, env: NodeJS.ProcessEnv): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
    const v = env[name];
    if (v === undefined) throw new Error(`${where} uses \${${name}}, which is not set in the worker's environment`);
    return v;
  });
}

/** Parses a config object; errors name the file, the path in it, and what was expected. */
/** `env`: what `${VAR}` in the file expands to (the worker's environment, from its settings). */
export function parseMcpConfig(raw: unknown, source: string, env: Env): McpServerConfig[] {
  const fail = (error: z.ZodError, prefix: (string | number)[] = []): never => {
    const issue = error.issues[0]!;
    const at = [...prefix, ...issue.path.map(String)].join('.') || '(top level)';
    throw new Error(`MCP config ${source}: ${at}: ${issue.message}`);
  };
  const top = ConfigFile.safeParse(raw);
  if (!top.success) return fail(top.error);
  return Object.entries(top.data.servers).map(([name, given]) => {
    const where = (field: string, key: string) => `MCP config ${source}: servers.${name}.${field}.${key}`;
    const map = (rec: Record<string, string> | undefined, field: string) =>
      rec && Object.fromEntries(Object.entries(rec).map(([k, v]) => [k, expand(v, where(field, k), env)]));
    // The transport is told by its field, so an error names the field that is wrong, not the union.
    if ('command' in given) {
      const s = Stdio.safeParse(given);
      if (!s.success) return fail(s.error, ['servers', name]);
      return { ...s.data, name, transport: 'stdio' as const, ...(s.data.env ? { env: map(s.data.env, 'env') } : {}) };
    }
    if ('url' in given) {
      const s = Http.safeParse(given);
      if (!s.success) return fail(s.error, ['servers', name]);
      return {
        ...s.data,
        name,
        transport: 'http' as const,
        ...(s.data.headers ? { headers: map(s.data.headers, 'headers') } : {}),
      };
    }
    throw new Error(
      `MCP config ${source}: servers.${name}: give "command" (a stdio server) or "url" (Streamable HTTP)`,
    );
  });
}

export function loadMcpConfig(file: string, env: Env): McpServerConfig[] {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path.resolve(file), 'utf8'));
  } catch (err) {
    throw new Error(`MCP config ${file}: ${(err as Error).message}`);
  }
  return parseMcpConfig(raw, file, env);
}
