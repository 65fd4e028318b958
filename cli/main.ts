import { Command } from 'commander';
import { processCommands } from './processes';
import { cancelCommand, sessionCommands, showCommand } from './sessions';
import { decisionCommands, keyCommands } from './decisions';
import { storageCommands } from './storage';
import { approvalsCommands } from './approvals';
import { mcpCommands } from './mcp';
import { scheduleCommands } from './schedules';
import { OpenWorkerError } from '../client/session';
import { packageVersion } from '../runtime/stateDir';
import type { Env } from '../runtime/config';
import { SettingsError, settingsFrom } from '../runtime/settings';
import { setSettings } from './common';
import { inCliTerms } from './flags';

// The commands live in sibling modules by subject; they are added here in the order the help lists them.
// The CLI's entry point: the settings are read from `env` once, before the command runs (help and
// a usage error need none), and every command takes them from there (settingsOf in ./common).
export function buildCli(env: Env = process.env): Command {
  const program = new Command('openworker-temporal')
    .description('Durable AI-agent turns on Temporal: one approval = at most one effect.')
    .option('--json', 'print machine-readable JSON')
    .option('--address <host:port>', 'Temporal frontend (default: TEMPORAL_ADDRESS or localhost:7233)')
    .option('--namespace <name>', 'Temporal namespace (default: TEMPORAL_NAMESPACE or default)')
    .option('--task-queue <name>', 'task queue of the workers (default: openworker)')
    .version(packageVersion(), '-V, --version', 'print the version of openworker-temporal')
    .showHelpAfterError(false)
    .hook('preAction', () => setSettings(program, settingsFrom(env)));

  processCommands(program);
  sessionCommands(program);
  decisionCommands(program);
  cancelCommand(program);
  keyCommands(program);
  showCommand(program);
  scheduleCommands(program);
  storageCommands(program);
  approvalsCommands(program);
  mcpCommands(program);

  return program;
}

export async function main(argv = process.argv): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    // Every bad variable at once, a line each; any other error in one line.
    const lines = err instanceof SettingsError ? err.problems : [err instanceof Error ? err.message : String(err)];
    for (const msg of lines) console.error(`error: ${inCliTerms(msg.split('\n')[0]!)}`);
    // 2: bad input; 3: a decision that cannot apply (the call was decided, or ran, already).
    process.exitCode = err instanceof OpenWorkerError ? ({ bad_input: 2, ignored: 3 }[err.code as string] ?? 1) : 1;
  }
}
