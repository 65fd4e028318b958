import { Command } from 'commander';
import { processCommands } from './processes';
import { cancelCommand, sessionCommands, showCommand } from './sessions';
import { decisionCommands, keyCommands } from './decisions';
import { storageCommands } from './storage';
import { approvalsCommands } from './approvals';
import { mcpCommands } from './mcp';
import { OpenWorkerError } from '../client/session';
import { packageVersion } from '../runtime/stateDir';
import { inCliTerms } from './flags';

// The commands live in sibling modules by subject; they are added here in the order the help lists them.
export function buildCli(): Command {
  const program = new Command('openworker-temporal')
    .description('Durable AI-agent turns on Temporal: one approval = at most one effect.')
    .option('--json', 'print machine-readable JSON')
    .option('--address <host:port>', 'Temporal frontend (default: TEMPORAL_ADDRESS or localhost:7233)')
    .option('--namespace <name>', 'Temporal namespace (default: TEMPORAL_NAMESPACE or default)')
    .option('--task-queue <name>', 'task queue of the workers (default: openworker)')
    .version(packageVersion(), '-V, --version', 'print the version of openworker-temporal')
    .showHelpAfterError(false);

  processCommands(program);
  sessionCommands(program);
  decisionCommands(program);
  cancelCommand(program);
  keyCommands(program);
  showCommand(program);
  storageCommands(program);
  approvalsCommands(program);
  mcpCommands(program);

  return program;
}

export async function main(argv = process.argv): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    console.error(`error: ${inCliTerms(msg.split('\n')[0]!)}`);
    // 2: bad input; 3: a decision that cannot apply (the call was decided, or ran, already).
    process.exitCode = err instanceof OpenWorkerError ? ({ bad_input: 2, ignored: 3 }[err.code as string] ?? 1) : 1;
  }
}
