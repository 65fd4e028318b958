import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../runtime/stateDir';

// `openworker-temporal --version` (#28): the package's version, from the CLI a user runs.

describe('CLI --version', () => {
  const root = packageRoot();
  const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  for (const flag of ['--version', '-V'])
    it(`${flag} prints the package version and exits 0`, () => {
      const out = execFileSync(process.execPath, [join(root, 'bin', 'openworker-temporal.js'), flag], {
        encoding: 'utf8',
        timeout: 20_000,
      });
      assert.equal(out, `${version}\n`);
    });
});
