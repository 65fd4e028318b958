import { join } from 'node:path';
import type { PayloadsMode } from './payloadStore';
import type { BenchTool, Step, TurnShape } from './workload';
import { MIXED, calls } from './workload';

// What `npm run bench` runs: the command line, the systems under test and the workloads.
// npm run bench [-- --quick] [--only main,mixed,latency,parked,crash,scale] [--ns 1,32] [--out dir] [--dynamic KEY=JSON]
//   [--payloads dir|s3] [--encrypt]

export const ROOT = join(__dirname, '..', '..');
const argv = process.argv;
const arg = (name: string): string | undefined => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);

/** A bad option: one line and exit 2, not a stack trace. */
export function usage(message: string): never {
  console.error(`bench: ${message}`);
  process.exit(2);
}

export const QUICK = argv.includes('--quick');
export const OUT = arg('--out') ?? join(ROOT, 'bench-results');
/** `--dynamic KEY=JSON` (repeatable): server dynamic config for a variant, e.g. system.enableActivityEagerExecution=true. */
export const DYNAMIC: Record<string, unknown> = Object.fromEntries(
  argv
    .flatMap((a, i) => (a === '--dynamic' ? [argv[i + 1]!] : []))
    .map((kv) => [kv.slice(0, kv.indexOf('=')), JSON.parse(kv.slice(kv.indexOf('=') + 1))]),
);
/** `--payloads dir|s3`: the payload store of every process, a directory (default) or SeaweedFS's S3. */
export const PAYLOADS = (arg('--payloads') ?? 'dir') as PayloadsMode;
if (PAYLOADS !== 'dir' && PAYLOADS !== 's3') usage(`--payloads '${PAYLOADS}' is not a store; use dir or s3`);
/** `--encrypt`: every process seals payloads with a fresh key (B1 and B2 too: they use the same data converter). */
export const ENCRYPT = argv.includes('--encrypt');
export const ALL_PARTS = ['main', 'mixed', 'latency', 'parked', 'crash', 'scale'] as const;
/** `--only main,mixed,…`: which parts to run (default all). */
export const PARTS = new Set(arg('--only')?.split(',') ?? ALL_PARTS);
for (const p of PARTS)
  if (!(ALL_PARTS as readonly string[]).includes(p))
    usage(`unknown part '${p}' in --only; parts: ${ALL_PARTS.join(', ')}`);

export const SYSTEMS = [
  'B0 in-process',
  'B1 idiomatic Temporal (signal-approved)',
  'B1 idiomatic Temporal (auto-approved read)',
  'B2 naive Temporal',
  'B3 ours (signal-approved)',
  'B3 ours (auto-approved read)',
] as const;
export type System = (typeof SYSTEMS)[number];
export const B0: System = 'B0 in-process';
export const B1: System = 'B1 idiomatic Temporal (signal-approved)';
export const B1_READ: System = 'B1 idiomatic Temporal (auto-approved read)';
export const B2: System = 'B2 naive Temporal';
export const B3: System = 'B3 ours (signal-approved)';
export const B3_READ: System = 'B3 ours (auto-approved read)';
/** The auto-approved read variants run the same turn with the read tool (no approval, no signal). */
export const isRead = (s: string): boolean => s.endsWith('(auto-approved read)');

export interface Workload {
  part: 'main' | 'mixed' | 'latency';
  /** Calls per turn, over all the model's responses. */
  k: number;
  /** The tool of every call, or `mixed`. */
  tool: BenchTool | 'mixed';
  /** Every model call's fixed latency, ms. */
  latencyMs: number;
  steps: readonly Step[];
  ns: readonly number[];
  /** A run at N=1 lasts at least this many turns (a slow model gives few turns in `seconds`). */
  minTurns: number;
}

const SECONDS = QUICK ? 1.5 : 5;
const ROUNDS = QUICK ? 1 : 3;
/** `--ns 1,32` replaces the concurrency levels of the main and mixed parts. */
const NS = arg('--ns')?.split(',').map(Number) ?? (QUICK ? [1, 8] : [1, 8, 32]);

const one = (k: number, tool: BenchTool, latencyMs = 0, part: Workload['part'] = 'main'): Workload => ({
  part,
  k,
  tool,
  latencyMs,
  steps: calls(k, tool),
  ns: part === 'latency' ? [1] : NS,
  minTurns: part === 'latency' ? 3 : 1,
});
const mixed = (latencyMs: number, part: Workload['part']): Workload => ({
  part,
  k: MIXED.reduce((a, s) => a + s.k, 0),
  tool: 'mixed',
  latencyMs,
  steps: MIXED,
  ns: part === 'latency' ? [1] : NS,
  minTurns: part === 'latency' ? 3 : 1,
});

const WORKLOADS: Workload[] = [
  one(0, 'noop'),
  one(1, 'noop'),
  one(3, 'noop'),
  one(1, 'sleep50'),
  ...(QUICK ? [] : [one(3, 'sleep50')]),
  mixed(0, 'mixed'),
  // A realistic model: every model call takes 300 ms or 1 s; at N=1, where durability's share of a turn shows.
  ...[300, 1000].flatMap((ms) => [one(1, 'noop', ms, 'latency'), mixed(ms, 'latency')]),
];

export const CONFIG = {
  seconds: SECONDS,
  rounds: ROUNDS,
  payloads: PAYLOADS,
  encrypt: ENCRYPT,
  workloads: WORKLOADS.filter((w) => PARTS.has(w.part)),
};

/** Which systems run a workload: the read variants only where the protected tool has a read twin. */
export const systemsFor = (w: Workload): System[] =>
  SYSTEMS.filter((s) => !isRead(s) || (w.part === 'main' && w.tool === 'noop' && w.k > 0));

/** The turn a system runs for a workload (the read variants call noop_read instead of noop). */
export const shapeFor = (system: System, w: Workload): TurnShape => ({
  steps: isRead(system) ? w.steps.map((s) => ({ ...s, tool: 'noop_read' })) : w.steps,
  latencyMs: w.latencyMs,
});
