import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { packageRoot } from '../../runtime/stateDir';

// What `npm publish` would ship (#28): no benchmark or test code, and no markdown whose relative
// link or image points at a file the package does not have (it would break on npmjs.com and in
// node_modules). Asks npm itself: `npm pack --dry-run --json`, scripts off (no build, no downloads).

/** Link and image targets in markdown: inline `[x](t)`, reference `[x]: t`, and HTML `src`/`href`. */
export function linkTargets(markdown: string): string[] {
  const text = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  const found = [
    ...[...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+["'(][^)]*)?\)/g)].map((m) => m[1]!),
    ...[...text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]!),
    ...[...text.matchAll(/\b(?:src|href)\s*=\s*["']([^"']+)["']/g)].map((m) => m[1]!),
  ];
  return found;
}

/** The relative targets of `file` (a path in the package) that are not among `shipped`. */
export function missingTargets(file: string, markdown: string, shipped: ReadonlySet<string>): string[] {
  return linkTargets(markdown).filter((target) => {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#') || target.startsWith('//')) return false;
    const path = decodeURI(target.split(/[?#]/)[0]!);
    if (!path) return false;
    const resolved = posix.normalize(path.startsWith('/') ? path.slice(1) : posix.join(posix.dirname(file), path));
    return !shipped.has(resolved) && !shipped.has(posix.join(resolved, 'README.md'));
  });
}

describe('the npm tarball', function () {
  this.timeout(60_000);
  let files: string[];
  before(() => {
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: packageRoot(),
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 50_000,
    });
    files = (JSON.parse(out) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
  });

  it('ships no benchmark and no test code', () => {
    assert.ok(files.includes('package.json') && files.includes('README.md'), files.join(', '));
    assert.deepEqual(
      files.filter((f) => f.startsWith('dist/bench/') || f.startsWith('dist/test/')),
      [],
    );
  });

  it('every relative link and image in its markdown points at a file it ships', () => {
    const shipped = new Set(files);
    const broken = files
      .filter((f) => f.endsWith('.md'))
      .flatMap((f) =>
        missingTargets(f, readFileSync(join(packageRoot(), f), 'utf8'), shipped).map((t) => `${f} → ${t}`),
      );
    assert.deepEqual(broken, []);
  });
});

describe('the npm tarball: missingTargets', () => {
  const shipped = new Set(['README.md', 'docs/a.md', 'docs/img/x.png']);
  const cases: { name: string; file: string; md: string; want: string[] }[] = [
    { name: 'a shipped image', file: 'docs/a.md', md: '![x](img/x.png)', want: [] },
    { name: 'a missing image', file: 'docs/a.md', md: '![x](img/y.png "title")', want: ['img/y.png'] },
    { name: 'up a folder, with an anchor', file: 'docs/a.md', md: '[r](../README.md#usage)', want: [] },
    { name: 'a missing source file', file: 'README.md', md: 'see [t](test/x.test.ts)', want: ['test/x.test.ts'] },
    { name: 'absolute URLs and anchors pass', file: 'README.md', md: '[a](https://x.org/y.png) [b](#top)', want: [] },
    { name: 'a reference-style link', file: 'README.md', md: '[a]: docs/missing.md', want: ['docs/missing.md'] },
    { name: 'an HTML image', file: 'docs/a.md', md: '<img src="img/z.png">', want: ['img/z.png'] },
    { name: 'code is not a link', file: 'README.md', md: '`[a](b.md)`\n```\n[c](d.md)\n```', want: [] },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(missingTargets(c.file, c.md, shipped), c.want));
});
