import { strict as assert } from 'node:assert';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { inCliTerms } from '../../cli/flags';

// The library speaks in its options; the command line translates them to flags.

const ROOT = join(__dirname, '..', '..', '..');
const LIBRARY = ['workflows', 'runtime', 'activities', 'worker', 'client'];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

describe('library errors name options, the CLI shows flags', () => {
  const cases: [string, string][] = [
    ['`turn` must be a positive integer, got 0', '--turn must be a positive integer, got 0'],
    ["`by`: 'auto' is reserved; set `by` or OPENWORKER_USER", "--by: 'auto' is reserved; set --by or OPENWORKER_USER"],
    ['`skipFence` only goes with `decision` retry', '--now only goes with --decision retry'],
    ["unknown `model` 'x'", "unknown --model 'x'"],
    ['`toolModules` ./t.mjs: file not found', '--tools ./t.mjs: file not found'],
    ['or use the `taskQueue` your worker polls', 'or use the --task-queue your worker polls'],
    ['a `quoted` word the CLI has no flag for stays', 'a `quoted` word the CLI has no flag for stays'],
  ];
  for (const [library, cli] of cases) it(`${library} → ${cli}`, () => assert.equal(inCliTerms(library), cli));

  it('no library module names a command-line flag outside a command to run', () => {
    const offenders: string[] = [];
    for (const file of LIBRARY.flatMap((d) => sources(join(ROOT, d)))) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          const code = line.trim();
          if (code.startsWith('//') || code.startsWith('*') || code.startsWith('/*')) return;
          // A command the message tells the reader to run keeps its own flags.
          const outside = code.replace(
            /'(openworker-)?temporal [^']*'|\(openworker-temporal [^)]*\)|`temporal operator [^`]*`|--(name|type) \$\{|\(default for --\w+\)/g,
            '',
          );
          if (/["'`][^"'`]*\s--[a-z][a-z-]+/.test(outside) || /["'`]--[a-z][a-z-]+/.test(outside))
            offenders.push(`${file.slice(ROOT.length + 1)}:${i + 1}: ${code.slice(0, 100)}`);
        });
    }
    assert.deepEqual(offenders, []);
  });
});
