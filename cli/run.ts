import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { LogLevel } from '@temporalio/worker';
import { startMailSink } from '../dev/mailSink';
import { startDevServer } from '../dev/server';
import type { CodecServer } from '../apps/codecServer';
import { newCodecToken, startCodecServer } from '../apps/codecServer';
import { startApprovalsServer } from '../apps/approvals/serve';
import { createToken } from '../apps/approvals/tokens';
import { ensureLocalKeyFile } from '../runtime/encryption';
import { describeMcpTools } from '../activities/mcp/servers';
import { createWorker } from '../worker/worker';
import { deploymentVersion } from '../runtime/deployment';
import { runtimeTelemetry } from '../worker/metrics';
import { connectClient } from '../client/connection';
import { formatTurn } from './format';
import { checkBaseline } from './baseline';
import { activeTurn, sendMessage, turnStatus, waitForTurn } from '../client/session';
import type { Settings } from '../runtime/settings';

// Long-running commands: server, worker, dev. Each runs until SIGINT/SIGTERM and cleans up after itself.
// Each takes the settings cli/main.ts read.

function installRuntime(settings: Settings): void {
  Runtime.install({
    logger: new DefaultLogger(settings.logLevel as LogLevel),
    // Metrics (OTEL_METRICS_EXPORTER=prometheus, or an OTLP endpoint): docs/observability.md.
    telemetryOptions: runtimeTelemetry(settings.telemetry),
  });
}

function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const done = (s: NodeJS.Signals) => resolve(s);
    process.once('SIGINT', done);
    process.once('SIGTERM', done);
  });
}

/** The Web UI's codec endpoint, behind a token from OPENWORKER_CODEC_TOKEN or fresh for this start. */
async function startUiCodec(settings: Settings): Promise<{ codec: CodecServer; token: string }> {
  const token = settings.codecToken ?? newCodecToken();
  return { codec: await startCodecServer({ token, settings }), token };
}

/**
 * The dev server and, unless headless, the codec endpoint its Web UI decrypts payloads and shows long
 * transcripts (stored outside history) through.
 */
async function startServerWithUi(
  opts: { db?: string; port: number; uiPort?: number; headless?: boolean },
  settings: Settings,
) {
  const ui = opts.headless ? undefined : await startUiCodec(settings);
  try {
    const server = await startDevServer({
      dbFile: opts.db,
      port: opts.port,
      uiPort: opts.uiPort,
      headless: opts.headless,
      settings,
      ...(ui ? { codecEndpoint: ui.codec.uiEndpoint } : {}),
    });
    return { server, ui, codec: ui?.codec };
  } catch (err) {
    // Otherwise the codec's listener keeps the CLI alive after it printed why the server did not start.
    await ui?.codec.close();
    throw err;
  }
}

const codecHelp = (c: { codec: CodecServer; token: string }) =>
  `Codec endpoint ${c.codec.url} (decrypts payloads for the Web UI, which is given ${c.codec.uiEndpoint}); other clients send 'Authorization: Bearer ${c.token}'. Set OPENWORKER_CODEC_TOKEN to keep the token across restarts.`;

export async function runServer(
  opts: { db?: string; port: number; uiPort?: number; headless?: boolean; json?: boolean },
  settings: Settings,
): Promise<void> {
  const { server, ui, codec } = await startServerWithUi(opts, settings);
  const info = {
    address: server.address,
    uiUrl: server.uiUrl,
    dbFile: server.dbFile,
    logFile: server.logFile,
    cli: server.cliPath,
    ...(ui ? { codecEndpoint: ui.codec.url, codecToken: ui.token } : {}),
  };
  console.log(
    opts.json
      ? JSON.stringify(info)
      : `Temporal dev server on ${server.address}${server.uiUrl ? `, Web UI ${server.uiUrl}` : ''}\n  data: ${server.dbFile}\n  log:  ${server.logFile}${ui ? `\n${codecHelp(ui)}` : ''}\nPress Ctrl-C to stop.`,
  );
  await Promise.race([untilSignal(), server.exited]);
  await server.stop();
  await codec?.close();
}

export interface RunWorkerOptions {
  address?: string;
  namespace?: string;
  taskQueue?: string;
  tools: string[];
  model: string;
  builtins: boolean;
  shutdownGrace: string;
  approvers?: string;
  only?: 'workflows' | 'activities';
  mcp?: string;
  deploymentName?: string;
  buildId?: string;
}

const WORKER_FRESH_START = 'start with a fresh state directory (OPENWORKER_STATE_DIR) on a new namespace or task queue';

export async function runWorker(opts: RunWorkerOptions, settings: Settings): Promise<void> {
  installRuntime(settings);
  // A flag wins over its variable, each on its own: `--build-id` alone with OPENWORKER_DEPLOYMENT_NAME set.
  const versioned = opts.deploymentName !== undefined || opts.buildId !== undefined;
  const deployment = versioned
    ? deploymentVersion({
        deploymentName: opts.deploymentName ?? settings.deployment?.deploymentName,
        buildId: opts.buildId ?? settings.deployment?.buildId,
      })
    : settings.deployment;
  // Before it polls: a worker must not take runs of an older baseline it cannot replay.
  await checkBaseline(
    { address: opts.address, namespace: opts.namespace, taskQueue: opts.taskQueue, settings },
    { versioned: !!deployment, freshStart: WORKER_FRESH_START },
  );
  const { worker, connection, taskQueue, tools, model, approvers, mcp, flushTraces } = await createWorker({
    ...(deployment ? { deployment } : {}),
    settings,
    address: opts.address,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    toolModules: opts.tools,
    model: opts.model,
    builtins: opts.builtins,
    shutdownGraceTime: opts.shutdownGrace,
    ...(opts.approvers ? { approvers: opts.approvers } : {}),
    ...(opts.only ? { only: opts.only } : {}),
    ...(opts.mcp ? { mcp: opts.mcp } : {}),
  });
  for (const line of describeMcpTools(mcp?.listed() ?? [], new Set(tools))) console.log(line);
  const signing = approvers
    ? `, approvers ${[...new Set(approvers.approvers.map((a) => a.name))].join(', ')} (${approvers.policy ? `policy of ${approvers.policy.length} rules: signed approvals only` : 'no policy: signatures checked when present'})`
    : '';
  // Tests and scripts wait for this line before they send work.
  const polls = opts.only ? `, ${opts.only} only` : '';
  const version = deployment ? `, deployment ${deployment.deploymentName} build ${deployment.buildId}` : '';
  console.log(
    `worker ready: task queue ${taskQueue}, model ${model}, tools ${tools.join(', ') || '(none)'}${signing}${polls}${version}`,
  );
  try {
    await worker.run(); // returns after SIGINT/SIGTERM once running tool calls finish (shutdown grace)
  } finally {
    await mcp?.close();
    await connection.close();
    await flushTraces?.();
  }
}

export interface DevOptions {
  db?: string;
  port: number;
  headless?: boolean;
  model: string;
  tools: string[];
  demo: boolean;
  recovery: 'reconcile' | 'manual';
  approvalsPort?: number;
  mcp?: string;
}

const BIN = path.join(__dirname, '..', '..', 'bin', 'openworker-temporal.js');

/**
 * The whole product on one machine: the dev server, a mail sink, and a worker in its own process,
 * restarted when it dies, so a crash (see Fault points in docs/testing.md) is a real one.
 */
export async function runDev(opts: DevOptions, settings: Settings): Promise<void> {
  const dir = settings.stateDir;
  // Before anything reads keys: the codec endpoint, the worker child and the demo client load this file.
  const generated = ensureLocalKeyFile(settings);
  if (generated)
    console.log(
      `Generated a payload encryption key in ${generated} (mode 0600): every client, worker and CLI run from here uses it; copy it to share, or set OPENWORKER_ENCRYPTION=off.`,
    );
  console.log('Starting the Temporal dev server…');
  const { server, ui, codec } = await startServerWithUi(opts, settings);
  // After the server started (its database is part of the state), before the worker polls it.
  await checkBaseline(
    { address: server.address, settings },
    {
      versioned: false,
      freshStart: 'start with a fresh state directory (OPENWORKER_STATE_DIR; with --db, a new database file too)',
    },
  ).catch(async (err) => {
    await codec?.close();
    await server.stop();
    throw err;
  });
  const sink = await startMailSink({ file: path.join(dir, 'mail.json') });
  // The worker reads send_email's settings from its environment: point it at the local sink unless
  // the user configured a real SMTP server.
  const smtpEnv = settings.smtp
    ? {}
    : {
        OPENWORKER_SMTP_HOST: '127.0.0.1',
        OPENWORKER_SMTP_PORT: String(sink.smtpPort),
        OPENWORKER_SMTP_LOOKUP_URL: opts.recovery === 'reconcile' ? sink.lookupUrl : '',
      };
  let worker: ChildProcess | undefined;
  let stopping = false;
  let starts = 0;
  let ready: () => void = () => undefined;
  const firstReady = new Promise<void>((r) => (ready = r));
  const startWorker = (): void => {
    const args = [
      BIN,
      'worker',
      '--address',
      server.address,
      '--model',
      opts.model,
      ...opts.tools.flatMap((t) => ['--tools', t]),
      ...(opts.mcp ? ['--mcp', path.resolve(opts.mcp)] : []),
    ];
    // Armed faults apply to the first worker only, so the restarted one can recover.
    const faults = starts++ === 0 ? (settings.faults ?? '') : '';
    worker = spawn(process.execPath, args, {
      env: { ...settings.env, ...smtpEnv, OPENWORKER_FAULTS: faults },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const prefix = (chunk: Buffer) =>
      chunk
        .toString()
        .split('\n')
        .filter(Boolean)
        .map((l) => `[worker ${worker?.pid}] ${l}`)
        .join('\n');
    worker.stdout!.on('data', (d: Buffer) => {
      console.log(prefix(d));
      if (d.toString().includes('worker ready')) ready();
    });
    worker.stderr!.on('data', (d: Buffer) => console.error(prefix(d)));
    worker.once('exit', (code, signal) => {
      if (stopping) return;
      console.log(`[dev] worker exited (${signal ?? code}); starting a new one`);
      setTimeout(startWorker, 500);
    });
  };
  startWorker();
  await firstReady;
  console.log(`Temporal ${server.address}${server.uiUrl ? `   Web UI ${server.uiUrl}` : ''}`);
  console.log(
    `Mail sink smtp://127.0.0.1:${sink.smtpPort} (lookup ${sink.lookupUrl}); send_email recovery policy: ${opts.recovery}`,
  );
  if (ui) console.log(codecHelp(ui));
  const approvals = await startDevApprovals(server.address, opts.approvalsPort ?? 8234, settings);
  if (opts.demo) await demo(server.address, settings).catch((err) => console.error(`demo: ${(err as Error).message}`));
  console.log('\nPress Ctrl-C to stop (state is kept in .openworker/).');
  await Promise.race([untilSignal(), server.exited]);
  stopping = true;
  const w = worker;
  if (w && w.exitCode === null && w.signalCode === null) {
    w.kill('SIGTERM');
    await new Promise((r) => w.once('exit', r));
  }
  await sink.close();
  await approvals.close();
  await codec?.close();
  await server.stop();
  console.log(`Stopped. Emails delivered so far: ${sink.messages().length} (${path.join(dir, 'mail.json')}).`);
}

const CLI = 'npx openworker-temporal';

/** The approvals app, with a fresh sign-in token for the local user (only its hash is kept). */
async function startDevApprovals(
  address: string,
  port: number,
  settings: Settings,
): Promise<{ close(): Promise<void> }> {
  const client = await connectClient({ address, settings });
  try {
    const app = await startApprovalsServer(client, { port });
    const user = settings.user;
    console.log(
      `Approvals ${app.url}   sign in as ${user} with ${createToken(user, settings.approvalsTokens)} (a new token each start; your decisions are recorded as ${user}: set OPENWORKER_USER for another name)`,
    );
    return {
      close: async () => {
        await app.close();
        await client.close();
      },
    };
  } catch (err) {
    await client.close();
    throw err;
  }
}

/** Starts (or shows) a turn in session `demo` that waits for an approval, and says what to type next. */
async function demo(address: string, settings: Settings): Promise<void> {
  const c = await connectClient({ address, settings });
  try {
    // The demo turn is started once; later runs show where the session stands.
    const exists = await activeTurn(c, 'demo').then(
      (turn) => ({ turn }),
      () => undefined,
    );
    if (exists && !exists.turn) {
      console.log(
        `\nSession 'demo' is idle. Next, in another terminal:\n  ${CLI} turn demo "email carol@example.com about the budget" --wait\n  ${CLI} show demo`,
      );
      return;
    }
    const t = exists?.turn
      ? await turnStatus(c, exists.turn.workflowId)
      : await (async () => {
          const sent = await sendMessage(c, { sessionId: 'demo', text: 'email bob@example.com about the launch' });
          return waitForTurn(c, { sessionId: 'demo', messageId: sent.messageId, timeoutMs: 60_000 });
        })();
    console.log(
      `\nDemo: session 'demo' asked the agent to "email bob@example.com about the launch".\n${formatTurn(t)}`,
    );
    const pending = t.ledger.find((e) => e.state === 'awaiting_approval' || e.state === 'recovery_required');
    if (pending) {
      const decide =
        pending.state === 'awaiting_approval'
          ? `approve demo ${pending.toolCallId} --by you`
          : `recover demo ${pending.toolCallId} --decision succeeded --by you`;
      console.log(`\nNext, in another terminal:\n  ${CLI} inbox\n  ${CLI} ${decide}\n  ${CLI} show demo`);
    }
  } finally {
    await c.close();
  }
}
