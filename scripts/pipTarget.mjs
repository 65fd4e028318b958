// What the install scripts share: is a file an executable, and pip-install a package into a folder
// of this checkout (.openworker/…), never into the user's Python.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';

export const executable = (file) => {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
};

/** `pip install --target <target> <requirement>`; returns spawnSync's result. */
export const pipInstall = (target, requirement, { extraArgs = [], timeoutMs = 300_000 } = {}) =>
  spawnSync(
    process.env.PYTHON ?? 'python3',
    [
      '-m',
      'pip',
      'install',
      '--disable-pip-version-check',
      '--no-warn-script-location',
      '--quiet',
      // Replaces another version already in the target folder.
      '--upgrade',
      ...extraArgs,
      '--target',
      target,
      requirement,
    ],
    // Root in CI containers is expected; pip's venv advice is noise there.
    { stdio: 'inherit', timeout: timeoutMs, env: { PIP_ROOT_USER_ACTION: 'ignore', ...process.env } },
  );
