import { existsSync } from 'node:fs';
import { join } from 'node:path';

// Where the tau2 airline environment lives: its Python server and helper (dev/tau2/*.py), their pinned
// packages, and the virtualenv scripts/install-tau2.mjs makes for them (npm run bench:tau2, test/tau2.test.ts).

const ROOT = join(__dirname, '..', '..', '..');
const SOURCE = join(ROOT, 'dev', 'tau2');

/** The virtualenv, beside the Temporal CLI and SeaweedFS in the project's `.openworker/`. */
export const tau2Venv = (): string => join(ROOT, '.openworker', 'tau2-venv');
export const tau2Python = (): string =>
  join(
    tau2Venv(),
    process.platform === 'win32' ? 'Scripts' : 'bin',
    process.platform === 'win32' ? 'python.exe' : 'python',
  );
export const TAU2_REQUIREMENTS = join(SOURCE, 'requirements.txt');
/** The MCP stdio server: `python airline_mcp.py --state FILE`. */
export const TAU2_SERVER = join(SOURCE, 'airline_mcp.py');
/** Tasks and reference databases: `python reference.py tasks | check ID STATE`. */
export const TAU2_REFERENCE = join(SOURCE, 'reference.py');
/** Written after a complete install: the requirements it installed, so a rerun with the same ones is a no-op. */
export const tau2Stamp = (): string => join(tau2Venv(), 'openworker-requirements.txt');
export const tau2Installed = (): boolean => existsSync(tau2Stamp());
