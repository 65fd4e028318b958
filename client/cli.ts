import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { MODEL_SPECS, defaultModelSpec } from '../activities/models';
import type { RecoveryDecision } from '../workflows/types';
import type { OpenWorkerClient } from './connection';
import { connectClient } from './connection';
import { cancelTurn } from './cancel';
import { approve, approveAll, recover, reject } from './decisions';
import {
  formatDecision,
  formatGrantChange,
  formatGrants,
  formatImport,
  formatInbox,
  formatSession,
  formatTurn,
} from './format';
import { importSession } from './import';
import { runChat } from './chat';
import { approveAlways, grant, listGrants, revoke } from './grants';
import type { GrantOutcome } from './grants';
import type { DecisionOutcome } from './decisions';
import { inbox, showSession } from './inspect';
import { OpenWorkerError, sendMessage, waitForTurn } from './session';
import { runDev, runServer, runWorker } from './processes';
import type { ApproverKeyPair } from './keys';
import { createApproverKey, keysDir, listApproverKeys, signingKey } from './keys';

interface Globals {
  json?: boolean;
  address?: string;
  namespace?: string;
  taskQueue?: string;
}

const positiveInt =
  (flag: string) =>
  (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`${flag} must be a positive integer`);
    return n;
  };
const port = (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number 0-65535');
  return n;
};
const json = (value: string): unknown => {
  try {
    return JSON.parse(value);
  } catch {
    throw new InvalidArgumentError(`not valid JSON: ${value.slice(0, 60)}; quote it, e.g. --result '{"id": 1}'`);
  }
};

function globals(cmd: Command): Globals {
  return cmd.optsWithGlobals() as Globals;
}

async function withClient<T>(cmd: Command, fn: (c: OpenWorkerClient) => Promise<T>): Promise<T> {
  const g = globals(cmd);
  const c = await connectClient({ address: g.address, namespace: g.namespace, taskQueue: g.taskQueue });
  try {
    return await fn(c);
  } finally {
    await c.close();
  }
}

function print(cmd: Command, value: unknown, human: string): void {
  console.log(globals(cmd).json ? JSON.stringify(value, null, 2) : human);
}

export function buildCli(): Command {
  const program = new Command('openworker-temporal')
    .description('Durable AI-agent turns on Temporal: one approval = at most one effect.')
    .option('--json', 'print machine-readable JSON')
    .option('--address <host:port>', 'Temporal frontend (default: TEMPORAL_ADDRESS or localhost:7233)')
    .option('--namespace <name>', 'Temporal namespace (default: TEMPORAL_NAMESPACE or default)')
    .option('--task-queue <name>', 'task queue of the workers (default: openworker)')
    .showHelpAfterError(false);

  program
    .command('server')
    .description('run the Temporal dev server with a persistent SQLite file and the Web UI')
    .option('--db <file>', 'SQLite file (default .openworker/temporal.db)')
    .option('--port <port>', 'gRPC port', port, 7233)
    .option('--ui-port <port>', 'Web UI port (default port + 1000)', port)
    .option('--headless', 'no Web UI')
    .action(async (opts, cmd) => runServer({ ...opts, json: globals(cmd).json }));

  program
    .command('worker')
    .description('run a worker: the session and turn workflows, the model and the tools')
    .option(
      '--tools <module>',
      'a .js/.mjs module whose default export is an array of tools (repeatable)',
      (v: string, prev: string[]) => [...prev, v],
      [],
    )
    .option(
      '--model <spec>',
      `${MODEL_SPECS.join(' | ')} (default: $OPENWORKER_MODEL, else a provider with a key set, else demo)`,
      defaultModelSpec(),
    )
    .option('--no-builtins', 'do not register the built-in tools (send_email)')
    .option('--shutdown-grace <duration>', 'how long SIGINT/SIGTERM waits for running tool calls', '60s')
    .option(
      '--approvers <file>',
      "approvers' public keys and policy (default: $OPENWORKER_APPROVERS); see docs/security.md, Signed approvals",
    )
    .addOption(
      new Option('--only <tasks>', 'poll only workflow tasks or only activity (model and tool) tasks').choices([
        'workflows',
        'activities',
      ]),
    )
    .action(async (opts, cmd) => runWorker({ ...globals(cmd), ...opts }));

  program
    .command('dev')
    .description('server + Web UI + mail sink + worker + a demo turn (what `npm start` runs)')
    .option('--db <file>', 'SQLite file (default .openworker/temporal.db)')
    .option('--port <port>', 'gRPC port', port, 7233)
    .option('--headless', 'no Web UI')
    .option(
      '--model <spec>',
      `${MODEL_SPECS.join(' | ')} (default: $OPENWORKER_MODEL, else a provider with a key set, else demo)`,
      defaultModelSpec(),
    )
    .option('--tools <module>', 'extra tools module (repeatable)', (v: string, prev: string[]) => [...prev, v], [])
    .option('--no-demo', 'do not start the demo turn')
    .addOption(
      new Option('--recovery <policy>', "send_email's recovery policy: reconcile (ask the mail sink) or manual")
        .choices(['reconcile', 'manual'])
        .default('reconcile'),
    )
    .action(async (opts) => runDev(opts));

  program
    .command('turn <sessionId> <message>')
    .description('send a message to a session (starting it if needed); --wait returns when the turn completes or parks')
    .option('--wait', 'wait for the turn to complete or wait for a decision')
    .option('--timeout <seconds>', 'how long --wait waits', positiveInt('--timeout'), 120)
    .action(async (sessionId: string, message: string, opts: { wait?: boolean; timeout: number }, cmd: Command) =>
      withClient(cmd, async (c) => {
        const sent = await sendMessage(c, { sessionId, text: message });
        if (!opts.wait) return print(cmd, sent, `queued message ${sent.messageId} in session ${sessionId}`);
        const t = await waitForTurn(c, { sessionId, messageId: sent.messageId, timeoutMs: opts.timeout * 1000 }).catch(
          (err: unknown) => {
            if (err instanceof OpenWorkerError && err.code === 'no_worker') {
              throw new OpenWorkerError(
                `queued message ${sent.messageId} in session ${sessionId}, but ${err.message.replace(/^[^:]*: /, '')}; the turn runs when one does`,
                'no_worker',
              );
            }
            throw err;
          },
        );
        print(cmd, t, formatTurn(t));
      }),
    );

  program
    .command('import <sessionId> <file>')
    .description(
      'start a session from a JSONL transcript of another runtime (OpenAI chat messages, one per line; - reads stdin)',
    )
    .option('--wait', 'wait until the imported tool calls are resolved or wait for a decision')
    .option('--timeout <seconds>', 'how long --wait waits', positiveInt('--timeout'), 120)
    .action(async (sessionId: string, file: string, opts: { wait?: boolean; timeout: number }, cmd: Command) => {
      const jsonl = readInput(file);
      await withClient(cmd, async (c) => {
        const r = await importSession(c, { sessionId, jsonl, source: file === '-' ? 'stdin' : file });
        const t =
          opts.wait && r.resumeMessageId
            ? await waitForTurn(c, { sessionId, messageId: r.resumeMessageId, timeoutMs: opts.timeout * 1000 })
            : undefined;
        print(cmd, t ? { ...r, turn: t } : r, [formatImport(r), ...(t ? [formatTurn(t)] : [])].join('\n'));
      });
    });

  program
    .command('chat <sessionId>')
    .description(
      'an interactive session: messages, inline approvals (once, always for the session, always for a target, reject) and recovery decisions',
    )
    .option('--by <name>', 'who approves (default: $OPENWORKER_USER or $USER)')
    .action(async (sessionId: string, opts: { by?: string }, cmd: Command) =>
      withClient(cmd, (c) => runChat(c, { sessionId, ...(opts.by ? { by: opts.by } : {}) })),
    );

  program
    .command('inbox')
    .description('every tool call awaiting approval or in recovery_required, across sessions, newest first')
    .option('--session <id>', 'only this session')
    .option('--tool <name>', 'only this tool')
    .addOption(new Option('--state <state>', 'only this state').choices(['awaiting_approval', 'recovery_required']))
    .option('--watch', 'refresh every 2 seconds until interrupted')
    .action(async (opts, cmd: Command) =>
      withClient(cmd, async (c) => {
        const filter = { sessionId: opts.session, tool: opts.tool, state: opts.state };
        for (;;) {
          const items = await inbox(c, filter);
          if (opts.watch && !globals(cmd).json) process.stdout.write('\x1b[2J\x1b[H');
          print(cmd, items, formatInbox(items));
          if (!opts.watch) return;
          await new Promise((r) => setTimeout(r, 2000));
        }
      }),
    );

  const decisionOptions = (c: Command): Command =>
    c
      .option('--by <name>', "who decides (default: the signing key's name, else $OPENWORKER_USER or $USER)")
      .option('--turn <n>', 'the turn (default: the running one)', positiveInt('--turn'))
      .option(
        '--key <name>',
        'sign with this approver key (default: $OPENWORKER_APPROVER_KEY, else the only key in the keys directory)',
      )
      .option('--no-sign', 'send the decision unsigned');
  // The key a decision is signed with, or none.
  const keyOf = (opts: { key?: string; sign?: boolean }): ApproverKeyPair | undefined =>
    opts.sign === false ? undefined : signingKey(opts.key);

  decisionOptions(
    program
      .command('approve <sessionId> <toolCallIds...>')
      .description('approve tool calls; several calls go in one signal (one workflow task)'),
  )
    .option('--digest <argsDigest>', 'only approve if the arguments still have this digest (one call)')
    .addOption(
      new Option(
        '--always <scope>',
        'also approve later calls of this tool in the session (session), or of this tool to this exact target (target); one call',
      ).choices(['session', 'target']),
    )
    .action(async (sessionId: string, toolCallIds: string[], opts, cmd: Command) => {
      if (toolCallIds.length > 1) {
        if (opts.digest || opts.always)
          throw new OpenWorkerError(
            '--digest and --always take a single tool call; approve the others separately',
            'bad_input',
          );
        const all = await withClient(cmd, (c) =>
          approveAll(c, { sessionId, toolCallIds, by: opts.by, turn: opts.turn, key: keyOf(opts) }),
        );
        print(cmd, all, all.map((d) => formatDecision('approve', d)).join('\n'));
        if (all.some((d) => d.outcome === 'ignored')) process.exitCode = 3;
        return;
      }
      const t = {
        sessionId,
        toolCallId: toolCallIds[0]!,
        by: opts.by,
        turn: opts.turn,
        argsDigest: opts.digest,
        key: keyOf(opts),
      };
      const d: DecisionOutcome & { grant?: GrantOutcome } = await withClient(cmd, (c) =>
        opts.always ? approveAlways(c, { ...t, always: opts.always as 'session' | 'target' }) : approve(c, t),
      );
      decided(cmd, 'approve', d);
      if (d.grant && !globals(cmd).json) console.log(formatGrantChange('granted', d.grant));
    });

  program
    .command('grant <sessionId> <tool>')
    .description(
      'a standing approval: later calls of <tool> in the session (to --target only, if given) need no approval',
    )
    .option('--target <target>', 'only calls to this exact target (e.g. bob@example.com)')
    .option('--by <name>', 'who grants (default: $OPENWORKER_USER or $USER)')
    .action(async (sessionId: string, tool: string, opts: { target?: string; by?: string }, cmd: Command) =>
      withClient(cmd, async (c) => {
        const g = await grant(c, {
          sessionId,
          tool,
          ...(opts.target ? { target: opts.target } : {}),
          ...(opts.by ? { by: opts.by } : {}),
        });
        print(cmd, g, formatGrantChange('granted', g));
      }),
    );

  program
    .command('grants <sessionId>')
    .description("the session's standing approvals, active and revoked, with the calls each approved")
    .action(async (sessionId: string, _opts, cmd: Command) =>
      withClient(cmd, async (c) => {
        const gs = await listGrants(c, sessionId);
        print(cmd, gs, formatGrants(sessionId, gs));
      }),
    );

  program
    .command('revoke <sessionId> <grantId>')
    .description('revoke a standing approval (calls it already approved stay approved)')
    .option('--by <name>', 'who revokes (default: $OPENWORKER_USER or $USER)')
    .action(async (sessionId: string, grantId: string, opts: { by?: string }, cmd: Command) =>
      withClient(cmd, async (c) => {
        const g = await revoke(c, { sessionId, grantId, ...(opts.by ? { by: opts.by } : {}) });
        print(cmd, g, formatGrantChange('revoked', g));
      }),
    );

  decisionOptions(
    program
      .command('reject <sessionId> <toolCallId>')
      .description('reject a tool call; the model is told it was not executed'),
  )
    .option('--reason <text>', 'why (the model sees it)')
    .action(async (sessionId: string, toolCallId: string, opts, cmd: Command) =>
      decided(
        cmd,
        'reject',
        await withClient(cmd, (c) =>
          reject(c, { sessionId, toolCallId, by: opts.by, turn: opts.turn, reason: opts.reason, key: keyOf(opts) }),
        ),
      ),
    );

  decisionOptions(
    program.command('recover <sessionId> <toolCallId>').description('resolve a call in recovery_required'),
  )
    .addOption(
      new Option(
        '--decision <decision>',
        'retry: run again with the same execution ID; succeeded: use --result; failed: tell the model',
      )
        .choices(['retry', 'succeeded', 'failed'])
        .makeOptionMandatory(),
    )
    .option('--result <json>', 'the tool result, with --decision succeeded', json)
    .option('--reason <text>', 'why')
    .option(
      '--now',
      "with retry: run at once instead of waiting out the last attempt's start-to-close window (audited)",
    )
    .action(async (sessionId: string, toolCallId: string, opts, cmd: Command) =>
      decided(
        cmd,
        'recover',
        await withClient(cmd, (c) =>
          recover(c, {
            sessionId,
            toolCallId,
            by: opts.by,
            turn: opts.turn,
            decision: opts.decision as RecoveryDecision,
            result: opts.result,
            reason: opts.reason,
            key: keyOf(opts),
            ...(opts.now ? { skipFence: true } : {}),
          }),
        ),
      ),
    );

  program
    .command('cancel <sessionId>')
    .description(
      "cancel the session's running turn: nothing new runs, every call gets a result, the session stays usable",
    )
    .option('--turn <n>', 'the turn (default: the running one)', positiveInt('--turn'))
    .option('--timeout <seconds>', 'how long to wait for the turn to finish cancelling', positiveInt('--timeout'), 30)
    .action(async (sessionId: string, opts: { turn?: number; timeout: number }, cmd: Command) =>
      withClient(cmd, async (c) => {
        const t = await cancelTurn(c, { sessionId, turn: opts.turn, waitMs: opts.timeout * 1000 });
        print(
          cmd,
          t,
          t.settled
            ? formatTurn(t)
            : `cancel requested for turn ${t.turn} of session ${sessionId}; it finishes cancelling when a worker runs`,
        );
      }),
    );

  const keys = program
    .command('keys')
    .description(
      'approver keys (Ed25519) for signed decisions; the private halves stay in $OPENWORKER_KEYS_DIR (default ~/.openworker/keys)',
    );
  keys
    .command('create <name>')
    .description("make a key pair for approver <name>; add the printed public key to the worker's approvers file")
    .action((name: string, _opts, cmd: Command) => {
      const k = createApproverKey(name);
      const { privateKey: _secret, ...shown } = k;
      print(
        cmd,
        shown,
        `created approver key ${k.name} (${k.keyId}) in ${keysDir()}\nfor the worker's approvers file:  "${k.name}": "${k.publicKey}"`,
      );
    });
  keys
    .command('list')
    .description('the approver keys in the keys directory (public halves)')
    .action((_opts, cmd: Command) => {
      const list = listApproverKeys().map(({ privateKey: _secret, ...k }) => k);
      print(
        cmd,
        list,
        list.length
          ? list.map((k) => `${k.name.padEnd(16)} ${k.keyId}  ${k.publicKey}`).join('\n')
          : `no approver keys in ${keysDir()} (openworker-temporal keys create <name>)`,
      );
    });

  program
    .command('show <sessionId>')
    .description('the transcript, the turns and every execution in the ledger')
    .action(async (sessionId: string, _opts, cmd: Command) =>
      withClient(cmd, async (c) => {
        const v = await showSession(c, sessionId);
        print(cmd, v, formatSession(v));
      }),
    );

  return program;
}

function readInput(file: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    throw new OpenWorkerError(
      `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}; give the path of a JSONL file or - for stdin`,
      'bad_input',
    );
  }
}

function decided(cmd: Command, kind: string, d: Awaited<ReturnType<typeof approve>>): void {
  print(cmd, d, formatDecision(kind, d));
  if (d.outcome === 'ignored') process.exitCode = 3;
}

export async function main(argv = process.argv): Promise<void> {
  try {
    await buildCli().parseAsync(argv);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    console.error(`error: ${msg.split('\n')[0]}`);
    process.exitCode = err instanceof OpenWorkerError && err.code === 'bad_input' ? 2 : 1;
  }
}
