import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ApproversConfig } from '../activities/approvers';
import { withApprovals } from '../activities/approvers';
import type { McpServerConfig } from '../activities/mcp/config';
import { loadMcpConfig } from '../activities/mcp/config';
import type { McpToolSet } from '../activities/mcp/pool';
import { startMcp } from '../activities/mcp/pool';
import type { ToolRegistry } from '../activities/registry';
import { createRegistry } from '../activities/registry';
import type { Tool } from '../activities/tool';
import { isTool } from '../activities/tool';
import { builtinTools } from '../activities/tools';
import type { Settings } from '../runtime/settings';

// The worker's tools: its own (given, from modules, built-in) and its MCP servers', in one registry.

export async function loadToolModule(path: string): Promise<Tool[]> {
  const abs = isAbsolute(path) ? path : resolve(process.cwd(), path);
  if (!existsSync(abs)) throw new Error(`\`toolModules\` ${path}: file not found (${abs})`);
  let mod: { default?: unknown };
  try {
    mod = await import(pathToFileURL(abs).href);
  } catch (err) {
    throw new Error(`\`toolModules\` ${path}: cannot load the module: ${(err as Error).message}`);
  }
  const tools = mod.default;
  if (!Array.isArray(tools))
    throw new Error(`\`toolModules\` ${path}: the default export must be an array of tools built with defineTool()`);
  tools.forEach((t, i) => {
    if (!isTool(t))
      throw new Error(`\`toolModules\` ${path}: item ${i} of the default export is not a tool built with defineTool()`);
  });
  return tools as Tool[];
}

/**
 * The built-ins (unless `builtins` is false), then the given tools. A given tool replaces a
 * built-in of the same name; two given tools with one name is an error.
 */
export function ownTools(
  given: readonly Tool[],
  builtins: boolean,
  settings: Pick<Settings, 'smtp' | 'payments'>,
): Tool[] {
  const base = builtins ? builtinTools(settings) : [];
  const builtinNames = new Set(base.map((t) => t.name));
  const seen = new Map<string, Tool>();
  for (const t of [...base, ...given]) {
    if (!isTool(t))
      throw new Error(`'${String((t as { name?: unknown })?.name ?? t)}' is not a tool built with defineTool()`);
    if (seen.has(t.name) && !builtinNames.has(t.name))
      throw new Error(`two tools are named '${t.name}'; tool names must be unique`);
    seen.set(t.name, t);
  }
  return [...seen.values()];
}

/** The MCP server configs given, or $OPENWORKER_MCP's (in the settings); none when neither is set. */
export function mcpConfigs(
  given: McpServerConfig[] | string | undefined,
  settings: Pick<Settings, 'mcp' | 'env'>,
): McpServerConfig[] {
  const source = given ?? settings.mcp;
  if (!source) return [];
  return typeof source === 'string' ? loadMcpConfig(source, settings.env) : source;
}

export function toolRegistry(
  own: readonly Tool[],
  maxArgsBytes: number,
  approvers: ApproversConfig | undefined,
): ToolRegistry {
  return withApprovals(createRegistry(own, { maxArgsBytes }), approvers);
}

/**
 * Connects the MCP servers and puts their tools into the registry beside the worker's own. A server
 * that changes its list swaps the new tools in; one whose new list clashes keeps the old.
 */
export async function attachMcp(
  registry: ToolRegistry,
  own: readonly Tool[],
  configs: readonly McpServerConfig[],
  log: (line: string) => void,
): Promise<McpToolSet | undefined> {
  if (!configs.length) return undefined;
  const mcp = await startMcp(configs, { log });
  try {
    registry.setTools([...own, ...mcp.tools()]);
  } catch (err) {
    await mcp.close();
    throw err;
  }
  mcp.onChange((tools) => {
    const before = registry.names().join(', ');
    try {
      registry.setTools([...own, ...tools]);
    } catch (err) {
      log(`mcp: the changed tool list was not taken, the old one stays: ${(err as Error).message}`);
      return false;
    }
    const now = registry.names().join(', ');
    if (now !== before) log(`mcp: tools now ${tools.map((t) => t.name).join(', ') || '(none)'}`);
    return true;
  });
  return mcp;
}
