import type { Command } from 'commander';
import { loadMcpConfig } from '../activities/mcp/config';
import { startMcp } from '../activities/mcp/pool';
import type { McpTool } from '../activities/mcp/servers';
import { OpenWorkerError } from '../client/session';
import { print, settingsOf } from './common';

type Checked = McpTool['policy'] & { server: string; tool: string; served: boolean };

/** A tool, what it gets and where each part came from (config, annotation, default). */
const line = (t: Checked): string => {
  const name = `${t.server}/${t.tool}`.padEnd(36);
  if (t.denied) return `${name} denied by the config`;
  if (!t.served) return `${name} left out: its input schema cannot be used (see the worker's log line)`;
  const asks = t.requiresApproval ? 'asks for approval' : 'runs unasked';
  const recovery = t.effect === 'external' ? `, recovery ${t.recovery} (${t.from.recovery})` : '';
  return `${name} as ${t.name}: ${t.effect} (${t.from.effect}), ${asks}${recovery}`;
};

/** `mcp check`: what a worker started with this MCP file would serve, without Temporal. */
export function mcpCommands(program: Command): void {
  program
    .command('mcp')
    .description('MCP servers as tool sources (see docs/mcp.md)')
    .command('check')
    .description('start the servers of an MCP file, list their tools with the policy each gets, and stop them')
    .option('--mcp <file>', 'the MCP servers file (default: $OPENWORKER_MCP)')
    .action(async (opts: { mcp?: string }, cmd: Command) => {
      const settings = settingsOf(cmd);
      const file = opts.mcp ?? settings.mcp;
      if (!file) throw new OpenWorkerError('mcp check: give --mcp <file> or set OPENWORKER_MCP', 'bad_input');
      const set = await startMcp(loadMcpConfig(file, settings.env), { log: (line) => console.error(line) });
      try {
        const served = new Set(set.tools().map((t) => t.name));
        const tools = set.listed().map((t) => ({
          server: t.server,
          tool: t.tool,
          served: served.has(t.policy.name),
          ...t.policy,
          annotations: t.annotations,
        }));
        print(cmd, { file, tools }, tools.map(line).join('\n'));
      } finally {
        await set.close();
      }
    });
}
