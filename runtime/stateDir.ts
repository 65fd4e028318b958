import fs from 'node:fs';
import path from 'node:path';

// Where this package and its local state live; shared by the CLI, the worker and the dev server.

/**
 * Where local state lives: `override` (OPENWORKER_STATE_DIR, read by runtime/settings.ts), else the
 * checkout, or the caller's cwd when installed under node_modules. (Tests point it at a temporary
 * directory, so a key file that `dev` generated in the checkout does not leak into them.)
 */
export function stateDirFor(override: string | undefined): string {
  if (override) return path.resolve(override);
  return path.join(installedAsDependency() ? process.cwd() : packageRoot(), '.openworker');
}

/** True when this package runs from a consumer's node_modules, false in a checkout of its repository. */
export function installedAsDependency(root = packageRoot()): boolean {
  return root.split(path.sep).includes('node_modules');
}

let cachedRoot: string | undefined;

/** Folder holding this package's package.json; works from both source (dev/) and compiled (dist/dev/) code. */
export function packageRoot(): string {
  if (cachedRoot) return cachedRoot;
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
      if (pkg.name === 'openworker-temporal') return (cachedRoot = dir);
    } catch {
      // no (readable) package.json here: keep walking up
    }
    if (path.dirname(dir) === dir) break;
  }
  // Unreachable in a normal checkout; the layout is dist/dev/temporalCli.js.
  return (cachedRoot = path.resolve(__dirname, '../..'));
}

/** This package's version, from its package.json (what `--version` prints). */
export function packageVersion(): string {
  const pkg = JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version?: unknown };
  return typeof pkg.version === 'string' ? pkg.version : 'unknown';
}
