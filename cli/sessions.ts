import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { Option } from 'commander';
import { runChat } from './chat';
import { cancelTurn } from '../client/cancel';
import { globals, positiveInt, print, turnLimit, withClient } from './common';
import { formatImport, formatInbox, formatSession, formatTurn } from './format';
import { importSession } from '../client/import';
import { inboxListing, showSession } from '../client/inspect';
import { OpenWorkerError, sendMessage, waitForTurn } from '../client/session';
import { DEFAULT_MAX_ITERATIONS, TURN_OPTIONS } from '../workflows/turnOptions';

/** The CLI commands about a session and its turns: messages, imports, the chat, the inbox, cancel and show. */

/** turn, import, chat and inbox, in the order the help lists them. */
export function sessionCommands(program: Command): void {
  turnCommand(program);
  importCommand(program);
  chatCommand(program);
  inboxCommand(program);
}

const MAX_ITERATIONS_HELP = `model calls a turn may make (default: the session's, else ${DEFAULT_MAX_ITERATIONS}; at most ${TURN_OPTIONS.maxIterations.max})`;

interface TurnFlags {
  wait?: boolean;
  timeout: number;
  maxIterations?: number;
  sessionMaxIterations?: number;
  queue?: boolean;
}

function turnCommand(program: Command): void {
  program
    .command('turn <sessionId> <message>')
    .description('send a message to a session (starting it if needed); --wait returns when the turn completes or parks')
    .option('--wait', 'wait for the turn to complete or wait for a decision')
    .option('--timeout <seconds>', 'how long --wait waits', positiveInt('--timeout'), 120)
    .option('--max-iterations <n>', MAX_ITERATIONS_HELP, turnLimit('maxIterations'))
    .option(
      '--session-max-iterations <n>',
      "the session's cap for every turn; only when this message starts the session",
      turnLimit('maxIterations', '--session-max-iterations'),
    )
    .option('--queue', 'while a turn runs, wait for a turn of its own instead of steering the running turn')
    .action(async (sessionId: string, message: string, opts: TurnFlags, cmd: Command) =>
      withClient(cmd, async (c) => {
        const sent = await sendMessage(c, {
          sessionId,
          text: message,
          ...(opts.maxIterations ? { options: { maxIterations: opts.maxIterations } } : {}),
          ...(opts.sessionMaxIterations ? { sessionOptions: { maxIterations: opts.sessionMaxIterations } } : {}),
          ...(opts.queue ? { queue: true } : {}),
        });
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
}

function importCommand(program: Command): void {
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
}

function chatCommand(program: Command): void {
  program
    .command('chat <sessionId>')
    .description(
      'an interactive session: messages, inline approvals (once, always for the session, always for a target, reject) and recovery decisions',
    )
    .option('--by <name>', 'who approves (default: $OPENWORKER_USER or $USER)')
    .option('--max-iterations <n>', `for each message of this chat: ${MAX_ITERATIONS_HELP}`, turnLimit('maxIterations'))
    .action(async (sessionId: string, opts: { by?: string; maxIterations?: number }, cmd: Command) =>
      withClient(cmd, (c) =>
        runChat(c, {
          sessionId,
          ...(opts.by ? { by: opts.by } : {}),
          ...(opts.maxIterations ? { options: { maxIterations: opts.maxIterations } } : {}),
        }),
      ),
    );
}

function inboxCommand(program: Command): void {
  program
    .command('inbox')
    .description('every tool call awaiting approval or in recovery_required, across sessions, newest first')
    .option('--session <id>', 'only this session')
    .option('--tool <name>', 'only this tool')
    .addOption(
      new Option('--state <state>', 'only this state').choices([
        'awaiting_approval',
        'recovery_required',
        'awaiting_answer',
      ]),
    )
    .option(
      '--limit <turns>',
      'read at most this many waiting turns, the most recently started first',
      positiveInt('--limit'),
    )
    .option('--watch', 'refresh every 2 seconds until interrupted')
    .action(async (opts, cmd: Command) =>
      withClient(cmd, async (c) => {
        const filter = { sessionId: opts.session, tool: opts.tool, state: opts.state, limit: opts.limit };
        for (;;) {
          // Exit 0 with the turns it could not read named (`unreadable` in --json): a script still acts on the rest.
          const listing = await inboxListing(c, filter);
          if (opts.watch && !globals(cmd).json) process.stdout.write('\x1b[2J\x1b[H');
          print(cmd, listing, formatInbox(listing.calls, listing.unreadable));
          if (!opts.watch) return;
          await new Promise((r) => setTimeout(r, 2000));
        }
      }),
    );
}

export function cancelCommand(program: Command): void {
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
            : `cancel requested for turn ${t.turn} of session ${sessionId}; it finishes cancelling when a worker picks it up${t.noWorker ? `: ${t.noWorker}` : ''}`,
        );
      }),
    );
}

export function showCommand(program: Command): void {
  program
    .command('show <sessionId>')
    .description('the transcript, the turns and every execution in the ledger')
    .action(async (sessionId: string, _opts, cmd: Command) =>
      withClient(cmd, async (c) => {
        const v = await showSession(c, sessionId);
        print(cmd, v, formatSession(v));
      }),
    );
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
