import type { Command } from 'commander';
import { Option } from 'commander';
import type { RecoveryDecision } from '../workflows/types';
import { RECOVERY_DECISIONS } from '../workflows/protocol';
import { globals, json, positiveInt, print, settingsOf, withClient } from './common';
import type { ArgumentEdits } from '../client/decisions';
import { answer } from '../client/answers';
import { approve, approveAll, recover, reject } from '../client/decisions';
import type { DecisionOutcome } from '../client/decisions';
import { formatDecision, formatGrantChange, formatGrants } from './format';
import { approveAlways, grant, listGrants, revoke, UnlistedToolError } from '../client/grants';
import type { GrantOutcome } from '../client/grants';
import type { ApproverKeyPair } from '../client/keys';
import { createApproverKey, listApproverKeys, signingKey } from '../client/keys';
import { OpenWorkerError } from '../client/session';

/** The CLI commands that decide on tool calls (approve, reject, recover), the standing approvals, and the approver keys. */

/** approve, grant, grants, revoke, reject and recover, in the order the help lists them. */
export function decisionCommands(program: Command): void {
  approveCommand(program);
  grantCommands(program);
  rejectCommand(program);
  recoverCommand(program);
  answerCommand(program);
}

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
const keyOf = (opts: { key?: string; sign?: boolean }, cmd: Command): ApproverKeyPair | undefined => {
  const { keysDir, approverKey } = settingsOf(cmd);
  return opts.sign === false ? undefined : signingKey(opts.key, keysDir, approverKey);
};

function approveCommand(program: Command): void {
  decisionOptions(
    program
      .command('approve <sessionId> <toolCallIds...>')
      .description('approve tool calls; several calls go in one signal (one workflow task)'),
  )
    .option('--digest <argsDigest>', 'only approve if the arguments still have this digest (one call)')
    .option(
      '--args <json>',
      "approve with edits: run the call with these arguments (a JSON object) instead; the tool's schema checks them first (one call)",
    )
    .option(
      '--set <key=value>',
      'approve with edits: change one field of the arguments (value as JSON, else a string); repeatable (one call)',
      collectSet,
    )
    .addOption(
      new Option(
        '--always <scope>',
        'also approve later calls of this tool in the session (session), or of this tool to this exact target (target); one call',
      ).choices(['session', 'target']),
    )
    .action(async (sessionId: string, toolCallIds: string[], opts, cmd: Command) => {
      const edits = editsOf(opts);
      if (toolCallIds.length > 1) {
        if (opts.digest || opts.always || edits)
          throw new OpenWorkerError(
            '--digest, --always, --args and --set take a single tool call; approve the others separately',
            'bad_input',
          );
        const all = await withClient(cmd, (c) =>
          approveAll(c, { sessionId, toolCallIds, by: opts.by, turn: opts.turn, key: keyOf(opts, cmd) }),
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
        key: keyOf(opts, cmd),
      };
      if (edits && opts.always)
        throw new OpenWorkerError(
          '--always approves later calls as the model asks them, so it takes no --args or --set; approve with edits without it',
          'bad_input',
        );
      const d: DecisionOutcome & { grant?: GrantOutcome } = await withClient(cmd, (c) =>
        opts.always
          ? approveAlways(c, { ...t, always: opts.always as 'session' | 'target' })
          : approve(c, { ...t, ...edits }),
      );
      decided(cmd, 'approve', d);
      if (d.grant && !globals(cmd).json) console.log(formatGrantChange('granted', d.grant));
    });
}

/** grant, grants and revoke. */
function grantCommands(program: Command): void {
  program
    .command('grant <sessionId> <tool>')
    .description(
      'a standing approval: later calls of <tool> in the session (to --target only, if given) need no approval',
    )
    .option('--target <target>', 'only calls to this exact target (e.g. bob@example.com)')
    .option('--by <name>', 'who grants (default: $OPENWORKER_USER or $USER)')
    .option('--unlisted', 'grant a tool no running worker lists now (e.g. one an MCP server adds later)')
    .action(
      async (
        sessionId: string,
        tool: string,
        opts: { target?: string; by?: string; unlisted?: boolean },
        cmd: Command,
      ) =>
        withClient(cmd, async (c) => {
          const g = await grant(c, {
            sessionId,
            tool,
            ...(opts.target ? { target: opts.target } : {}),
            ...(opts.by ? { by: opts.by } : {}),
            ...(opts.unlisted ? { unlisted: true } : {}),
          }).catch((err: unknown) => {
            if (err instanceof UnlistedToolError)
              throw new OpenWorkerError(
                `${err.message}; to grant it before a worker lists it, add --unlisted`,
                'bad_input',
              );
            throw err;
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
}

function rejectCommand(program: Command): void {
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
          reject(c, {
            sessionId,
            toolCallId,
            by: opts.by,
            turn: opts.turn,
            reason: opts.reason,
            key: keyOf(opts, cmd),
          }),
        ),
      ),
    );
}

function recoverCommand(program: Command): void {
  decisionOptions(
    program.command('recover <sessionId> <toolCallId>').description('resolve a call in recovery_required'),
  )
    .addOption(
      new Option(
        '--decision <decision>',
        'retry: run again with the same execution ID; succeeded: use --result; failed: tell the model',
      )
        .choices(RECOVERY_DECISIONS)
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
            key: keyOf(opts, cmd),
            ...(opts.now ? { skipFence: true } : {}),
          }),
        ),
      ),
    );
}

function answerCommand(program: Command): void {
  program
    .command('answer <sessionId> <toolCallId> <answer...>')
    .description('answer a question the agent asks (ask_user); with choices, one of them or its number')
    .option('--by <name>', 'who answers (default: $OPENWORKER_USER or $USER)')
    .option('--turn <n>', 'the turn (default: the running one)', positiveInt('--turn'))
    .action(async (sessionId: string, toolCallId: string, words: string[], opts, cmd: Command) =>
      decided(
        cmd,
        'answer',
        await withClient(cmd, (c) =>
          answer(c, { sessionId, toolCallId, answer: words.join(' '), by: opts.by, turn: opts.turn }),
        ),
      ),
    );
}

export function keyCommands(program: Command): void {
  const keys = program
    .command('keys')
    .description(
      'approver keys (Ed25519) for signed decisions; the private halves stay in $OPENWORKER_KEYS_DIR (default ~/.openworker/keys)',
    );
  keys
    .command('create <name>')
    .description("make a key pair for approver <name>; add the printed public key to the worker's approvers file")
    .action((name: string, _opts, cmd: Command) => {
      const { keysDir } = settingsOf(cmd);
      const k = createApproverKey(name, keysDir);
      const { privateKey: _secret, ...shown } = k;
      print(
        cmd,
        shown,
        `created approver key ${k.name} (${k.keyId}) in ${keysDir}\nfor the worker's approvers file:  "${k.name}": "${k.publicKey}"`,
      );
    });
  keys
    .command('list')
    .description('the approver keys in the keys directory (public halves)')
    .action((_opts, cmd: Command) => {
      const { keysDir } = settingsOf(cmd);
      const list = listApproverKeys(keysDir).map(({ privateKey: _secret, ...k }) => k);
      print(
        cmd,
        list,
        list.length
          ? list.map((k) => `${k.name.padEnd(16)} ${k.keyId}  ${k.publicKey}`).join('\n')
          : `no approver keys in ${keysDir} (openworker-temporal keys create <name>)`,
      );
    });
}

/** `--set key=value`, repeatable: the value is JSON when it parses as JSON, else the string itself. */
function collectSet(pair: string, into: Record<string, unknown> = {}): Record<string, unknown> {
  const eq = pair.indexOf('=');
  if (eq < 1) throw new OpenWorkerError(`--set takes key=value, got '${pair.slice(0, 60)}'`, 'bad_input');
  const raw = pair.slice(eq + 1);
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    value = raw;
  }
  return { ...into, [pair.slice(0, eq)]: value };
}

/** The edits `--args` / `--set` ask for, or undefined for a plain approval. */
function editsOf(opts: { args?: string; set?: Record<string, unknown> }): ArgumentEdits | undefined {
  if (opts.args !== undefined && opts.set !== undefined)
    throw new OpenWorkerError('give either --args or --set, not both', 'bad_input');
  if (opts.set !== undefined) return { set: opts.set };
  if (opts.args === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(opts.args);
  } catch (err) {
    throw new OpenWorkerError(
      `--args is not valid JSON (${(err as Error).message}); give an object like '{"to":"ann@example.com"}'`,
      'bad_input',
    );
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new OpenWorkerError(
      `--args must be a JSON object (the tool's arguments), got ${Array.isArray(parsed) ? 'an array' : JSON.stringify(parsed)}`,
      'bad_input',
    );
  return { arguments: parsed as Record<string, unknown> };
}

function decided(cmd: Command, kind: string, d: Awaited<ReturnType<typeof approve>>): void {
  print(cmd, d, formatDecision(kind, d));
  if (d.outcome === 'ignored') process.exitCode = 3;
}
