import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import { InvalidArgumentError, type Command } from 'commander';
import { connectClient } from '../client/connection';
import { clientOptions, port, positiveInt, print, settingsOf } from './common';
import { startApprovalsServer } from '../apps/approvals/serve';
import { createToken, readTokens, revokeToken } from '../apps/approvals/tokens';
import { OpenWorkerError } from '../client/session';
import { notifyTaskQueue } from '../workflows/ids';

interface ServeOptions {
  port: number;
  host: string;
  trustHeader?: string;
  poll: number;
  secureCookie?: boolean;
  notify: string[];
  publicUrl?: string;
}

function webhookUrl(v: string): string {
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw new InvalidArgumentError(`not a URL: '${v.slice(0, 80)}'; give http(s)://host/path`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new InvalidArgumentError(`'${v.slice(0, 80)}' is not http(s)`);
  return u.toString();
}

/** `approvals serve` and `approvals token create|list|revoke`. */
export function approvalsCommands(program: Command): void {
  const approvals = program
    .command('approvals')
    .description('the approvals web app: an inbox and call pages for operators, and a JSON API for scripts');
  approvals
    .command('serve')
    .description('serve the approvals app (stateless: run as many replicas as you like behind a load balancer)')
    .option('--port <port>', 'port (0: any free one)', port, 8234)
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--trust-header <name>', "a reverse proxy's authenticated-user header, e.g. X-Forwarded-User")
    .option('--poll <seconds>', 'how often the live inbox reads Temporal', positiveInt('--poll'), 2)
    .option('--secure-cookie', 'mark the sign-in cookie Secure (served over https)')
    .option(
      '--notify <url>',
      'POST a message (Slack-compatible JSON) here when a call parks, for workers run with OPENWORKER_NOTIFY=on (repeatable)',
      (v: string, prev: string[]) => [...prev, webhookUrl(v)],
      [] as string[],
    )
    .option('--public-url <url>', 'where operators reach this app, for the links in notifications')
    .action(async (opts: ServeOptions, cmd: Command) => {
      // The notifier is a Temporal worker: its SDK logs at the worker's level (OPENWORKER_LOG_LEVEL).
      if (opts.notify.length) Runtime.install({ logger: new DefaultLogger(settingsOf(cmd).logLevel as LogLevel) });
      const client = await connectClient(clientOptions(cmd));
      const server = await startApprovalsServer(client, {
        port: opts.port,
        host: opts.host,
        pollMs: opts.poll * 1000,
        ...(opts.trustHeader ? { trustHeader: opts.trustHeader } : {}),
        ...(opts.secureCookie ? { secureCookie: true } : {}),
        notify: opts.notify,
        ...(opts.publicUrl ? { publicUrl: webhookUrl(opts.publicUrl) } : {}),
      });
      console.log(
        `approvals: ${server.url} (sign in with a token from 'openworker-temporal approvals token create --name <you>')`,
      );
      if (opts.notify.length)
        console.log(
          `notifier: ${opts.notify.length} URL(s), taking parks from task queue ${notifyTaskQueue(client.taskQueue)} (run the workers with OPENWORKER_NOTIFY=on)`,
        );
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await server.close();
      await client.close();
    });
  const token = approvals.command('token').description("operators' sign-in tokens (stored hashed)");
  token
    .command('create')
    .description('a new token for an operator (replaces their old one); printed once')
    .requiredOption('--name <name>', 'who decides with it (recorded as `by`)')
    .action((opts: { name: string }, cmd: Command) => {
      const file = settingsOf(cmd).approvalsTokens;
      const t = createToken(opts.name, file);
      print(cmd, { name: opts.name, token: t, file }, `${t}\n(for ${opts.name}; only its hash is kept, in ${file})`);
    });
  token
    .command('list')
    .description('who has a token')
    .action((_opts, cmd: Command) => {
      const all = readTokens(settingsOf(cmd).approvalsTokens).map(({ name, createdAt }) => ({ name, createdAt }));
      print(cmd, all, all.length ? all.map((t) => `${t.name}  ${t.createdAt}`).join('\n') : 'no tokens');
    });
  token
    .command('revoke')
    .description("revoke an operator's token")
    .requiredOption('--name <name>', 'whose')
    .action((opts: { name: string }, cmd: Command) => {
      if (!revokeToken(opts.name, settingsOf(cmd).approvalsTokens))
        throw new OpenWorkerError(`no token for '${opts.name}' (see 'approvals token list')`, 'not_found');
      print(cmd, { name: opts.name, revoked: true }, `revoked ${opts.name}'s token`);
    });
}
