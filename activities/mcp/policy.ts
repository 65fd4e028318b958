import type { RecoveryPolicy, ToolEffect } from '../tool';
import type { McpServerConfig, ToolOverride } from './config';

// How an MCP tool is governed, decided from its annotations and the worker's config. Annotations
// are the server's hints about itself; the config is the operator's word. The config wins every
// field it sets, and `trustAnnotations: false` ignores the hints altogether: a server can describe
// its tools, never relax what the operator decided.

/** The MCP tool annotations this mapping reads (see the MCP spec, ToolAnnotations). */
export interface McpAnnotations {
  readOnlyHint?: boolean;
  idempotentHint?: boolean;
  destructiveHint?: boolean;
  openWorldHint?: boolean;
}

export interface McpToolPolicy {
  /** The name in the registry, as the model sees it. */
  name: string;
  denied: boolean;
  effect: ToolEffect;
  requiresApproval: boolean;
  recovery: RecoveryPolicy;
  target?: string;
  timeoutMs?: number;
  heartbeatMs?: number;
  /** A read as a local activity (default) or an activity of its own. */
  local?: boolean;
  /** What an `isError: true` result means (default failed). */
  errorResult: 'failed' | 'unknown';
  /** Where each field came from, for the worker's start-up line and the docs. */
  from: {
    effect: 'config' | 'annotation' | 'default';
    recovery: 'config' | 'server dedupes' | 'annotation' | 'default';
  };
}

const NAME_CHARS = /[^A-Za-z0-9_-]/g;

/** `<server>__<tool>`, with characters a provider refuses replaced, at most 64. */
export const registryName = (server: string, tool: string): string =>
  `${server}__${tool}`.replace(NAME_CHARS, '_').slice(0, 64);

export function policyFor(server: McpServerConfig, tool: string, annotations: McpAnnotations = {}): McpToolPolicy {
  const own: ToolOverride = server.tools?.[tool] ?? {};
  const set = { ...server.defaults, ...own };
  const hints = server.trustAnnotations === false ? {} : annotations;
  // Where each decision comes from first; the value follows from it.
  const effectFrom = set.effect ? 'config' : hints.readOnlyHint === true ? 'annotation' : 'default';
  const effect: ToolEffect = set.effect ?? (effectFrom === 'annotation' ? 'read' : 'external');
  const recoveryFrom = set.recovery
    ? 'config'
    : effect === 'external' && server.dedupes
      ? 'server dedupes'
      : hints.idempotentHint === true
        ? 'annotation'
        : 'default';
  const recovery: RecoveryPolicy = set.recovery ?? (recoveryFrom === 'default' ? 'manual' : 'idempotent');
  return {
    name: own.name ?? registryName(server.name, tool),
    denied: set.deny === true,
    effect,
    // Nothing that changes the world runs unasked unless the operator said so.
    requiresApproval: set.approval ?? effect === 'external',
    recovery,
    ...(set.target ? { target: set.target } : {}),
    ...(set.timeoutMs ? { timeoutMs: set.timeoutMs } : {}),
    ...(set.heartbeatMs ? { heartbeatMs: set.heartbeatMs } : {}),
    ...(set.local !== undefined && effect === 'read' ? { local: set.local } : {}),
    errorResult: set.errorResult ?? 'failed',
    from: { effect: effectFrom, recovery: recoveryFrom },
  };
}
