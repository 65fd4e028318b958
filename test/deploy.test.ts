import { strict as assert } from 'node:assert';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { GetBucketLifecycleConfigurationCommand } from '@aws-sdk/client-s3';
import { resolveConnectConfig } from '../runtime/connection';
import { DYNAMIC_CONFIG } from '../dev/server';
import { resolveTemporalCli } from '../dev/temporalCli';
import { startS3Server, type S3Server } from './support/s3Server';
import { ROOT } from './support/processes';
import { testServer } from './support/hooks';
import { processSettings } from '../runtime/settings';

// docs/deploy.md, run as written: its `sh` blocks in order, each in bash with the environment the
// previous ones left; `sh worker` blocks as long-running workers (ready before the next block, then
// stopped with SIGTERM as a process manager would). Its variables point at this run's Temporal
// server and a SeaweedFS bucket.

interface Block {
  lang: string;
  worker: boolean;
  code: string;
}

export function blocksOf(markdown: string): Block[] {
  return [...markdown.matchAll(/^```(\w+)( worker)?\n([\s\S]*?)^```$/gm)].map((m) => ({
    lang: m[1]!,
    worker: Boolean(m[2]),
    code: m[3]!,
  }));
}

const BUCKET = 'acme-openworker';

describe('docs/deploy.md, every command run as written', function () {
  this.timeout(240_000);
  let s3: S3Server;
  let dir: string;
  const workers: ChildProcess[] = [];
  const doc = readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8');

  before(async function () {
    this.timeout(90_000);
    s3 = await startS3Server();
    await s3.createBucket(BUCKET);
    dir = mkdtempSync(join(tmpdir(), 'openworker-deploy-'));
  });
  after(async () => {
    for (const w of workers) if (w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
    await s3?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the YAML dynamic config is what `server` and `dev` set', () => {
    const yaml = blocksOf(doc).filter((b) => b.lang === 'yaml');
    assert.equal(yaml.length, 1);
    const keys = [...yaml[0]!.code.matchAll(/^([\w.]+):\n\s+- value: (\S+)$/gm)].map((m) => [m[1]!, JSON.parse(m[2]!)]);
    assert.ok(keys.length >= 3);
    for (const [key, value] of keys) assert.deepEqual(DYNAMIC_CONFIG[key], value, key);
  });

  it('runs every sh block in order: profiles, namespace, S3 store, keys, two workers, a turn, graceful shutdown', async () => {
    const cli = await resolveTemporalCli(process.env);
    const bin = join(dir, 'bin');
    const secrets = join(dir, 'secrets');
    mkdirSync(bin);
    mkdirSync(secrets);
    writeFileSync(
      join(bin, 'openworker-temporal'),
      `#!/bin/sh\nexec node ${join(ROOT, 'bin', 'openworker-temporal.js')} "$@"\n`,
    );
    chmodSync(join(bin, 'openworker-temporal'), 0o755);
    writeFileSync(join(secrets, 'temporal-api-key'), 'not-a-real-key\n');
    const cert = spawnSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=openworker',
      '-keyout', join(secrets, 'client.key'), '-out', join(secrets, 'client.pem'),
    ]); // prettier-ignore
    assert.equal(cert.status, 0, String(cert.stderr));

    // A host that knows only what the page tells it: no TEMPORAL_* or OPENWORKER_* from this test run.
    let env: NodeJS.ProcessEnv = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !/^(TEMPORAL_|OPENWORKER_|AWS_)/.test(k)),
    );
    Object.assign(env, {
      PATH: `${bin}:${dirname(cli.path)}:${process.env.PATH}`,
      HOME: join(dir, 'home'),
      OPENWORKER_STATE_DIR: join(dir, 'state'),
      TEMPORAL_FRONTEND: testServer().address,
      BUCKET,
      SECRETS_DIR: secrets,
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_ACCESS_KEY_ID: s3.accessKeyId,
      AWS_SECRET_ACCESS_KEY: s3.secretAccessKey,
      AWS_REGION: s3.region,
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    });
    let out = '';
    const blocks = blocksOf(doc).filter((b) => b.lang === 'sh');
    assert.ok(blocks.length >= 8, `${blocks.length} sh blocks`);
    for (const [i, b] of blocks.entries()) {
      if (b.worker) {
        // A single command: bash execs it, so this process is the worker itself.
        const w = spawn('bash', ['-c', b.code.trim()], { env, stdio: ['ignore', 'pipe', 'pipe'] });
        workers.push(w);
        let log = '';
        await new Promise<void>((resolve, reject) => {
          const t = setTimeout(() => reject(new Error(`block ${i} (worker): not ready in 30 s: ${log}`)), 30_000);
          const onData = (d: Buffer) => {
            log += String(d);
            if (/worker ready/.test(log)) {
              clearTimeout(t);
              resolve();
            }
          };
          w.stdout!.on('data', onData);
          w.stderr!.on('data', onData);
          w.once('exit', (code) => reject(new Error(`block ${i} (worker) exited ${code}: ${log}`)));
        });
        continue;
      }
      const envFile = join(dir, `env-${i}`);
      const r = spawnSync('bash', ['-euo', 'pipefail', '-c', `${b.code}\nenv -0 > ${envFile}`], {
        env,
        encoding: 'utf8',
        timeout: 120_000,
      });
      assert.equal(r.status, 0, `block ${i}:\n${b.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
      out += r.stdout;
      env = Object.fromEntries(
        readFileSync(envFile, 'utf8')
          .split('\0')
          .filter(Boolean)
          .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
      );
    }

    assert.match(out, /payload store s3:\/\/acme-openworker\/openworker\/prod: stored and read back 16384 bytes/);
    assert.match(out, /payloads expire 90 days after they were written/);
    assert.match(out, /session-deploy-check-turn-1: (completed|awaiting_approval)/);

    // The namespace and its search attributes, as the cluster reports them.
    const listed = spawnSync(
      cli.path,
      ['operator', 'search-attribute', 'list', '--namespace', 'openworker-prod', '--address', testServer().address],
      { encoding: 'utf8', timeout: 20_000 },
    );
    assert.match(listed.stdout, /OpenWorkerState\s+Keyword/);
    assert.match(listed.stdout, /OpenWorkerSession\s+Keyword/);

    // The lifecycle rule on the prefix.
    const bucket = s3.client();
    try {
      const rules = (await bucket.send(new GetBucketLifecycleConfigurationCommand({ Bucket: BUCKET }))).Rules ?? [];
      assert.deepEqual(
        rules.map((r) => [r.ID, r.Filter?.Prefix, r.Expiration?.Days]),
        [['openworker-payloads', 'openworker/prod/', 90]],
      );
    } finally {
      bucket.destroy();
    }

    // The Cloud profiles resolve as a worker would read them.
    const asProfile = (profile: string) => {
      const vars = {
        HOME: env.HOME,
        TEMPORAL_PROFILE: profile,
        TEMPORAL_ADDRESS: undefined,
        TEMPORAL_NAMESPACE: undefined,
      };
      const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
      const set = (values: Record<string, string | undefined>) => {
        for (const [k, v] of Object.entries(values))
          if (v === undefined) delete process.env[k];
          else process.env[k] = v;
      };
      set(vars);
      try {
        return resolveConnectConfig({}, processSettings());
      } finally {
        set(saved);
      }
    };
    const cloud = asProfile('cloud');
    assert.deepEqual(
      [cloud.address, cloud.namespace, cloud.apiKey, cloud.tls],
      ['openworker-prod.a1b2c.tmprl.cloud:7233', 'openworker-prod.a1b2c', 'not-a-real-key', true],
    );
    const mtls = asProfile('cloud-mtls') as { tls?: { clientCertPair?: { crt: Uint8Array; key: Uint8Array } } };
    const pair = mtls.tls?.clientCertPair;
    assert.match(Buffer.from(pair?.crt ?? []).toString(), /BEGIN CERTIFICATE/, 'the certificate is read');
    assert.match(Buffer.from(pair?.key ?? []).toString(), /BEGIN PRIVATE KEY/, 'and its key');

    // Graceful shutdown, as a process manager does it: SIGTERM, and each worker exits 0 in its grace.
    for (const w of workers) {
      const exited = new Promise<number | null>((resolve) => w.once('exit', (code) => resolve(code)));
      w.kill('SIGTERM');
      assert.equal(await exited, 0);
    }
  });
});
