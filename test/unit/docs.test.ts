import { strict as assert } from 'node:assert';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { matrixTable } from '../matrix/table';

// The README and the pages in docs/ are one document split in files: every relative link must land
// on a file that exists and, for `#anchor` links, on a heading that exists there (GitHub's slugs).
// The guarantees page's fault-matrix table is generated from the matrix (test/matrix/cells.ts).

const ROOT = join(__dirname, '..', '..', '..');
const read = (rel: string) => readFileSync(join(ROOT, rel), 'utf8');
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** Markdown outside fenced code blocks, line by line (code may show `[x](y)` or `# comments`). */
function proseLines(markdown: string): string[] {
  let fenced = false;
  return markdown.split('\n').filter((line) => {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      return false;
    }
    return !fenced;
  });
}

/** GitHub's heading anchor: lowercase, punctuation dropped except '-' and '_', spaces → '-'. */
function slug(heading: string): string {
  const text = heading.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1'); // a link in a heading keeps its text
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor a page offers; a repeated heading gets -1, -2, … as on GitHub. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of proseLines(markdown)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** Relative link and image targets of a page, outside code (fenced blocks and `inline code`). */
function relativeLinks(markdown: string): string[] {
  const targets: string[] = [];
  for (const line of proseLines(markdown)) {
    const prose = line.replace(/`[^`]*`/g, '``');
    for (const m of prose.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1]!;
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) targets.push(target);
    }
  }
  return targets;
}

/** What is wrong with each relative link of `page` (a path from the repository root); empty when all resolve. */
function brokenLinks(page: string, markdown: string, readPage: (rel: string) => string | undefined): string[] {
  const broken: string[] = [];
  for (const target of relativeLinks(markdown)) {
    const [path, anchor] = target.split('#', 2) as [string, string | undefined];
    const file = path ? relative(ROOT, resolve(ROOT, dirname(page), decodeURI(path))) : page;
    if (file.startsWith('..')) {
      broken.push(`${page}: ${target} leaves the repository`);
      continue;
    }
    const text = readPage(file);
    if (text === undefined) {
      broken.push(`${page}: ${target} → ${file} does not exist`);
      continue;
    }
    if (anchor !== undefined && !anchors(text).has(anchor))
      broken.push(`${page}: ${target} → no heading '#${anchor}' in ${file}`);
  }
  return broken;
}

function readFromDisk(rel: string): string | undefined {
  const abs = join(ROOT, rel);
  if (!existsSync(abs)) return undefined;
  return statSync(abs).isDirectory() || !rel.endsWith('.md') ? '' : readFileSync(abs, 'utf8');
}

describe('docs', () => {
  it('the guarantees page shows the fault matrix exactly as the tests run it (regenerate: node dist/test/matrix/table.js)', () => {
    const page = read('docs/guarantees.md');
    const m = /<!-- matrix:start -->\n([\s\S]*?)\n<!-- matrix:end -->/.exec(page);
    assert.ok(m, 'docs/guarantees.md has no <!-- matrix:start --> … <!-- matrix:end --> block');
    assert.equal(m[1], matrixTable());
    assert.ok(
      PAGES.every((p) => p === 'docs/guarantees.md' || !read(p).includes('<!-- matrix:start -->')),
      'the matrix is shown once, in docs/guarantees.md',
    );
  });

  it('every test the guarantees page names as proof of an assumption exists, under that title', () => {
    const page = read('docs/guarantees.md');
    const section = /## What the promise assumes\n([\s\S]*?)\n## /.exec(page);
    assert.ok(section, "docs/guarantees.md has no '## What the promise assumes' section");
    const named = [...section[1]!.matchAll(/`(test\/[^`]+\.ts)` › "([^"]+)"/g)];
    assert.ok(named.length >= 10, `expected the assumptions to name their tests, found ${named.length}`);
    for (const [, file, title] of named) {
      assert.ok(existsSync(join(ROOT, file!)), `${file} (named in the assumptions) does not exist`);
      assert.ok(read(file!).includes(title!), `${file} has no test titled "${title}"`);
    }
  });

  it('slugs headings as GitHub does', () => {
    const cases: [string, string][] = [
      ['The protocol (for `temporal` and any Temporal SDK)', 'the-protocol-for-temporal-and-any-temporal-sdk'],
      ['Benchmark: the cost of durability per tool call', 'benchmark-the-cost-of-durability-per-tool-call'],
      ['Standing approvals (grants)', 'standing-approvals-grants'],
      ['A crash and a recovery', 'a-crash-and-a-recovery'],
      ['snake_case and kebab-case, 1.2', 'snake_case-and-kebab-case-12'],
      ['[Linked](x.md) heading', 'linked-heading'],
    ];
    for (const [heading, expected] of cases) assert.equal(slug(heading), expected, heading);
    assert.deepEqual([...anchors('# A\n## A\n```\n# not a heading\n```\n### A\n')], ['a', 'a-1', 'a-2']);
  });

  it('finds a broken link (the checker is not vacuous)', () => {
    const pages: Record<string, string> = { 'docs/a.md': '# Title\n## Known limits\n' };
    const md = [
      '[ok](a.md#known-limits) [ok](#here) ![img](a.md)',
      '[missing file](b.md) [missing anchor](a.md#nope) [outside](../../x.md)',
      '`[in code](gone.md)` [web](https://example.com/x.md)',
      '```',
      '[in a fence](gone.md)',
      '```',
      '# Here',
    ].join('\n');
    assert.deepEqual(
      brokenLinks('docs/c.md', md, (rel) => (rel === 'docs/c.md' ? md : pages[rel])),
      [
        'docs/c.md: b.md → docs/b.md does not exist',
        "docs/c.md: a.md#nope → no heading '#nope' in docs/a.md",
        'docs/c.md: ../../x.md leaves the repository',
      ],
    );
  });

  it('every relative link in README.md and docs/*.md resolves, anchors included', () => {
    assert.ok(PAGES.length > 1, 'docs/ has pages');
    const broken = PAGES.flatMap((page) => brokenLinks(page, read(page), readFromDisk));
    assert.deepEqual(broken, []);
  });

  it('states each thing once: no line of 50+ characters appears in two pages', () => {
    const where = new Map<string, string>();
    const twice: string[] = [];
    for (const page of PAGES) {
      for (const line of new Set(
        read(page)
          .split('\n')
          .map((l) => l.trim()),
      )) {
        if (line.length < 50) continue;
        const first = where.get(line);
        if (first) twice.push(`${first} and ${page}: ${line.slice(0, 80)}`);
        else where.set(line, page);
      }
    }
    assert.deepEqual(twice, [], 'keep the text in one page and link to it from the other');
  });

  it('the README links every docs page', () => {
    const linked = new Set(relativeLinks(read('README.md')).map((t) => t.split('#')[0]));
    const unlinked = PAGES.filter((p) => p !== 'README.md' && !linked.has(p));
    assert.deepEqual(unlinked, [], 'add a line for each page under "Documentation" in README.md');
  });

  it('the README stays a front page (at most 200 lines) and shows the test command CI runs', () => {
    const readme = read('README.md');
    assert.ok(
      readme.split('\n').length <= 201,
      `README.md has ${readme.split('\n').length} lines; move detail to docs/`,
    );
    assert.match(readme, /^npm test {2,}# /m);
  });
});
