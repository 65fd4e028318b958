import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { PATCH_BUDGET, PATCHES } from '../../workflows/patches';

// The patch budget and the one place patch names live (workflows/patches.ts says a patch's life):
// every patched() or deprecatePatch() in the workflow code names an entry of PATCHES, and no more than
// PATCH_BUDGET entries live between two baselines.

const WORKFLOWS = join(__dirname, '..', '..', '..', 'workflows');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** Each call of the SDK's patch API in `text` (comments aside), with its argument as written. */
export function patchCalls(text: string): { api: string; arg: string }[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  const calls: { api: string; arg: string }[] = [];
  for (const m of code.matchAll(/\b(patched|deprecatePatch)\s*\(\s*([^)]*)\)/g))
    calls.push({ api: m[1]!, arg: m[2]!.trim() });
  return calls;
}

describe('patches: the budget and the names', () => {
  it(`at most ${PATCH_BUDGET} patch names live at once`, () => {
    assert.ok(Object.keys(PATCHES).length <= PATCH_BUDGET, `${Object.keys(PATCHES).length} names: cut a baseline`);
  });

  it('every name is unique and versioned', () => {
    const names = Object.values(PATCHES) as string[];
    assert.equal(new Set(names).size, names.length);
    for (const n of names) assert.match(n, /^[a-z0-9-]+-v\d+$/);
  });

  it('every patched() and deprecatePatch() in workflows/ names an entry of PATCHES', () => {
    const files = sources(WORKFLOWS);
    assert.ok(files.length > 20, `workflow sources under ${WORKFLOWS}`);
    const bad = files.flatMap((f) =>
      patchCalls(readFileSync(f, 'utf8'))
        .filter((c) => !/^PATCHES\.\w+$/.test(c.arg) || !(c.arg.slice('PATCHES.'.length) in PATCHES))
        .map((c) => `${f}: ${c.api}(${c.arg})`),
    );
    assert.deepEqual(bad, []);
  });

  // The scanner itself, on the forms it must catch and the ones it must pass.
  const cases: [string, string, { api: string; arg: string }[]][] = [
    ['a listed name', 'if (patched(PATCHES.x)) a();', [{ api: 'patched', arg: 'PATCHES.x' }]],
    ['a literal', "deprecatePatch('x-v1');", [{ api: 'deprecatePatch', arg: "'x-v1'" }]],
    ['spaced', 'patched( PATCHES.y )', [{ api: 'patched', arg: 'PATCHES.y' }]],
    ['prose mentions nothing callable', 'ask patched once; notpatched(x)', []],
    ['comments are not code', '/** `patched(P)` */ a(); // deprecatePatch(P)', []],
  ];
  for (const [name, text, want] of cases) it(`scanner: ${name}`, () => assert.deepEqual(patchCalls(text), want));
});
