import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

// What an MCP call's answer, or its failure, says about whether the tool ran. Pure: the table in
// docs/mcp.md, tested row by row in test/unit/mcpTools.test.ts.

/**
 * `refused`: the server answered that it did not run the tool. `not_sent`: the request never reached
 * it. `unknown`: it may have run. `broken`: the connection is of no further use.
 */
export interface CallFailure {
  outcome: 'refused' | 'not_sent' | 'unknown';
  broken: boolean;
}

const REFUSALS = new Set<number>([ErrorCode.MethodNotFound, ErrorCode.InvalidParams]);
/** HTTP answers to the POST that mean it was not taken: bad request or a forgotten session, no access, rate limited. */
const TURNED_AWAY = new Set<number>([400, 401, 403, 404, 429]);

export function classifyCallError(err: unknown, aborted: boolean): CallFailure {
  if (err instanceof McpError) {
    // The SDK's server also answers "invalid params" when the result its tool returned fails the
    // server's own check: the tool ran.
    const resultRefused = err.code === ErrorCode.InvalidParams && /Invalid tools\/call result/.test(err.message);
    if (REFUSALS.has(err.code) && !resultRefused) return { outcome: 'refused', broken: false };
    // A timeout, a closed connection, or any other error the server answered after it got the request.
    return { outcome: 'unknown', broken: err.code === ErrorCode.ConnectionClosed };
  }
  // Our own stop (a cancel, a timeout, a shutdown) after the request went out.
  if (aborted) return { outcome: 'unknown', broken: false };
  // The SDK refuses to send on a connection that already closed.
  if (err instanceof Error && err.message === 'Not connected') return { outcome: 'not_sent', broken: true };
  // The HTTP server turned the POST away: it did not take the request. Other answers (a 408 or 409
  // from a proxy that forwarded it, a 5xx) may come after the server got it.
  if (err instanceof StreamableHTTPError && TURNED_AWAY.has(err.code ?? 0))
    return { outcome: 'not_sent', broken: true };
  const cause = (err as { cause?: { code?: string } } | undefined)?.cause;
  if (cause?.code === 'ECONNREFUSED') return { outcome: 'not_sent', broken: true };
  // A result that does not parse came from a server that ran: unknown, and the connection still works.
  if (Array.isArray((err as { issues?: unknown } | undefined)?.issues)) return { outcome: 'unknown', broken: false };
  // Anything else is the transport failing mid-request (a reset, a closed pipe).
  return { outcome: 'unknown', broken: true };
}

const TEXT_CAP = 4_000;

/** The text blocks of a result, joined; what the model reads of an error. */
export function textOf(result: CallToolResult): string {
  return (result.content ?? [])
    .flatMap((c) => (c.type === 'text' ? [c.text] : []))
    .join('\n')
    .slice(0, TEXT_CAP);
}

/** What the model sees of a successful call: structured content, else the text, else the blocks. */
export function valueOf(result: CallToolResult): unknown {
  if (result.structuredContent !== undefined) return result.structuredContent;
  const content = result.content ?? [];
  return content.every((c) => c.type === 'text') ? content.map((c) => c.text).join('\n') : content;
}

/**
 * An `isError` result is a definite failure, except where it says the tool ran: the SDK's server
 * reports its own output check (made after the tool ran) as an error result.
 */
export function errorResultRan(result: CallToolResult): boolean {
  return /Output validation error/.test(textOf(result));
}
