import type { OpenWorkerClient } from '../../client/connection';
import type { MailSink } from '../../dev/mailSink';
import { startMailSink } from '../../dev/mailSink';
import type { PaymentsApi } from '../../dev/paymentsApi';
import { startPaymentsApi } from '../../dev/paymentsApi';
import type { WorkerProcess } from './processes';
import { spawnWorker } from './processes';
import { TOOLS, client, uniq } from './scenario';

/** The external systems and the per-test client an end-to-end test file works with. */
export interface World {
  sink: MailSink;
  /** The payments API (Idempotency-Key semantics) that the test tool charge_card calls. */
  payments: PaymentsApi;
  c: OpenWorkerClient;
  /** Unique per test, so a test's workers never take another test's work. */
  taskQueue: string;
  /**
   * A worker process with the test tools and send_email wired to the sink. `reconcile: true` gives
   * send_email the sink's lookup URL (recovery policy `reconcile`; otherwise `manual`).
   */
  worker(
    model: string,
    opts?: {
      faults?: string;
      reconcile?: boolean;
      address?: string;
      env?: Record<string, string>;
      extraArgs?: string[];
      /** A script run instead of the CLI's worker command (a worker of another build). */
      script?: string;
    },
  ): Promise<WorkerProcess>;
}

/** Registers the mocha hooks that set up and tear down a World; use its fields inside tests. */
export function useWorld(): World {
  const world = {} as World;
  before(async () => {
    world.sink = await startMailSink();
    world.payments = await startPaymentsApi();
  });
  after(async () => {
    await world.sink?.close();
    await world.payments?.close();
  });
  beforeEach(async () => {
    world.taskQueue = uniq('tq');
    world.c = await client(world.taskQueue);
  });
  afterEach(async () => world.c?.close());
  world.worker = (model, opts = {}) =>
    spawnWorker({
      taskQueue: world.taskQueue,
      model,
      tools: [TOOLS],
      ...(opts.faults ? { faults: opts.faults } : {}),
      ...(opts.extraArgs ? { extraArgs: opts.extraArgs } : {}),
      ...(opts.script ? { script: opts.script } : {}),
      env: {
        OPENWORKER_SMTP_HOST: '127.0.0.1',
        OPENWORKER_SMTP_PORT: String(world.sink.smtpPort),
        OPENWORKER_SMTP_LOOKUP_URL: opts.reconcile ? world.sink.lookupUrl : undefined,
        // Short sends keep the reconcile fence (dispatch + start-to-close) short in tests.
        OPENWORKER_SMTP_TIMEOUT: '15s',
        TEST_PAYMENTS_URL: world.payments.url,
        ...(opts.address ? { TEMPORAL_ADDRESS: opts.address } : {}),
        ...opts.env,
      },
    });
  return world;
}
