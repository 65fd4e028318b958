import type { Command } from 'commander';
import { Option } from 'commander';
import { MODEL_SPECS } from '../activities/models';
import { globals, port, settingsOf } from './common';
import { runDev, runServer, runWorker } from './run';

/** The CLI commands that run processes: the Temporal dev server, a worker, and all of them together for the demo. */
export function processCommands(program: Command): void {
  serverCommand(program);
  workerCommand(program);
  devCommand(program);
}

/** What `server` and `dev` say of the dev server options they share. */
const SERVER_OPTIONS = {
  db: 'SQLite file (default .openworker/temporal.db)',
  port: 'gRPC port',
  headless: 'no Web UI',
};

function serverCommand(program: Command): void {
  program
    .command('server')
    .description('run the Temporal dev server with a persistent SQLite file and the Web UI')
    .option('--db <file>', SERVER_OPTIONS.db)
    .option('--port <port>', SERVER_OPTIONS.port, port, 7233)
    .option('--ui-port <port>', 'Web UI port (default port + 1000)', port)
    .option('--headless', SERVER_OPTIONS.headless)
    .action(async (opts, cmd) => runServer({ ...opts, json: globals(cmd).json }, settingsOf(cmd)));
}

/**
 * --model, for worker and dev: no default value here (settings.modelSpec fills it when the command
 * runs); the help says what it is, once.
 */
const modelOption = (): Option =>
  new Option(
    '--model <spec>',
    `${MODEL_SPECS.join(' | ')} (default: $OPENWORKER_MODEL, else a provider with a key set, else demo)`,
  );

function workerCommand(program: Command): void {
  program
    .command('worker')
    .description('run a worker: the session and turn workflows, the model and the tools')
    .option(
      '--tools <module>',
      'a .js/.mjs module whose default export is an array of tools (repeatable)',
      (v: string, prev: string[]) => [...prev, v],
      [],
    )
    .addOption(modelOption())
    .option('--no-builtins', 'do not register the built-in tools (send_email)')
    .option('--shutdown-grace <duration>', 'how long SIGINT/SIGTERM waits for running tool calls', '60s')
    .option(
      '--approvers <file>',
      "approvers' public keys and policy (default: $OPENWORKER_APPROVERS); see docs/security.md, Signed approvals",
    )
    .option('--mcp <file>', 'MCP servers whose tools this worker serves (default: $OPENWORKER_MCP); see docs/mcp.md')
    .addOption(
      new Option('--only <tasks>', 'poll only workflow tasks or only activity (model and tool) tasks').choices([
        'workflows',
        'activities',
      ]),
    )
    .option(
      '--deployment-name <name>',
      'Worker Deployment Versioning: poll as this deployment, with --build-id (default: $OPENWORKER_DEPLOYMENT_NAME, else unversioned); see docs/deploy.md',
    )
    .option('--build-id <id>', "this worker's build ID in its deployment (default: $OPENWORKER_BUILD_ID)")
    .action(async (opts, cmd) => {
      const settings = settingsOf(cmd);
      return runWorker({ ...globals(cmd), ...opts, model: opts.model ?? settings.modelSpec }, settings);
    });
}

function devCommand(program: Command): void {
  program
    .command('dev')
    .description('server + Web UI + mail sink + worker + a demo turn (what `npm start` runs)')
    .option('--db <file>', SERVER_OPTIONS.db)
    .option('--port <port>', SERVER_OPTIONS.port, port, 7233)
    .option('--headless', SERVER_OPTIONS.headless)
    .addOption(modelOption())
    .option('--tools <module>', 'extra tools module (repeatable)', (v: string, prev: string[]) => [...prev, v], [])
    .option('--mcp <file>', "MCP servers for the worker's tools (see docs/mcp.md)")
    .option('--no-demo', 'do not start the demo turn')
    .option('--approvals-port <port>', 'the approvals app (0: any free port)', port, 8234)
    .addOption(
      new Option('--recovery <policy>', "send_email's recovery policy: reconcile (ask the mail sink) or manual")
        .choices(['reconcile', 'manual'])
        .default('reconcile'),
    )
    .action(async (opts, cmd) => {
      const settings = settingsOf(cmd);
      return runDev({ ...opts, model: opts.model ?? settings.modelSpec }, settings);
    });
}
