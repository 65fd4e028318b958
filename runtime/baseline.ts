import fs from 'node:fs';
import path from 'node:path';
import { BASELINE } from '../workflows/baseline';

// The state directory's baseline stamp (workflows/baseline.ts): `dev` and `worker` refuse to start on
// a directory whose open runs an older baseline started, since their histories no longer replay here.

/** The stamp's file in the state directory: the baseline number, alone on its line. */
export const STAMP_FILE = 'baseline';

/** A stamp as read: absent, a baseline number, or text that is not one. */
export type Stamp = number | undefined | { malformed: string };

export interface BaselineFacts {
  /** This build's baseline. */
  baseline: number;
  stamp: Stamp;
  /** The directory holds anything besides its stamp (the dev server's database, payloads, keys, mail). */
  hasState: boolean;
  /** Open runs of the project's workflow types on the worker's queue; undefined until the server was asked. */
  openRuns?: number;
  /** For the messages: the state directory, where the runs were counted, and how to start afresh. */
  dir: string;
  where: string;
  freshStart: string;
}

export type BaselineStep =
  { kind: 'proceed' } | { kind: 'stamp' } | { kind: 'ask' } | { kind: 'refuse'; message: string };

/** What start does with its state directory; pure, so the table in test/unit/baseline.test.ts covers every case. */
export function baselineStep(f: BaselineFacts): BaselineStep {
  const { baseline, stamp, dir } = f;
  if (typeof stamp === 'object')
    return refuse(
      `${path.join(dir, STAMP_FILE)} holds '${stamp.malformed}', not a baseline number: write the baseline of the build that last ran here (this build's is ${baseline}), or delete the file to have the server checked for open runs`,
    );
  if (stamp === baseline) return { kind: 'proceed' };
  if (stamp !== undefined && stamp > baseline)
    return refuse(
      `state directory ${dir} is stamped with baseline ${stamp}, newer than this build's ${baseline}: run a build of baseline ${stamp} or later, or ${f.freshStart}`,
    );
  if (stamp === undefined && !f.hasState) return { kind: 'stamp' };
  if (f.openRuns === undefined) return { kind: 'ask' };
  if (f.openRuns === 0) return { kind: 'stamp' };
  const was = stamp === undefined ? 'not stamped, so from before baseline 1' : `stamped with baseline ${stamp}`;
  return refuse(
    `${f.openRuns} open run${f.openRuns === 1 ? '' : 's'} on ${f.where} may have been started by an older baseline (state directory ${dir} is ${was}; this build is baseline ${baseline}): drain them with the previous build, or ${f.freshStart} (docs/deploy.md, "Moving to a new baseline")`,
  );
}

const refuse = (message: string): BaselineStep => ({ kind: 'refuse', message });

/** The stamp in `dir`, if any. */
export function readStamp(dir: string): Stamp {
  let text: string;
  try {
    text = fs.readFileSync(path.join(dir, STAMP_FILE), 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return /^\d{1,9}$/.test(text) ? Number(text) : { malformed: text.slice(0, 40) };
}

/** Whether `dir` holds anything besides its stamp (a missing directory holds nothing). */
export function hasState(dir: string): boolean {
  try {
    return fs.readdirSync(dir).some((name) => name !== STAMP_FILE && !name.startsWith(`${STAMP_FILE}.`));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** Writes the stamp whole (a temporary file renamed), so a worker starting beside this one never reads half of it. */
export function writeStamp(dir: string, baseline = BASELINE): void {
  fs.mkdirSync(dir, { recursive: true });
  const tmp = path.join(dir, `${STAMP_FILE}.${process.pid}.tmp`);
  fs.writeFileSync(tmp, `${baseline}\n`);
  fs.renameSync(tmp, path.join(dir, STAMP_FILE));
}

/**
 * At `dev` or `worker` start: decides from the stamp and the directory, asks `countOpenRuns` only when
 * the directory has state and an older (or no) stamp, then stamps or throws the refusal. A stamp that
 * cannot be written is reported to `log` and not fatal: it guards the next start, it is not state.
 */
export async function ensureBaseline(opts: {
  dir: string;
  where: string;
  freshStart: string;
  countOpenRuns: () => Promise<number>;
  log: (line: string) => void;
}): Promise<void> {
  const facts: BaselineFacts = {
    ...opts,
    baseline: BASELINE,
    stamp: readStamp(opts.dir),
    hasState: hasState(opts.dir),
  };
  let step = baselineStep(facts);
  if (step.kind === 'ask') step = baselineStep({ ...facts, openRuns: await opts.countOpenRuns() });
  if (step.kind === 'refuse') throw new Error(step.message);
  if (step.kind !== 'stamp') return;
  try {
    writeStamp(opts.dir);
  } catch (err) {
    opts.log(
      `warning: cannot write the baseline stamp in ${opts.dir} (${(err as Error).message}); starting anyway, but the next start cannot tell which baseline ran here`,
    );
  }
}
