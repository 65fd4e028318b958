import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { matrixTable } from '../matrix/table';

// The guarantees page's fault-matrix table is generated from the matrix (test/matrix/cells.ts).

const ROOT = join(__dirname, '..', '..', '..');
const read = (rel: string) => readFileSync(join(ROOT, rel), 'utf8');
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

describe('docs', () => {
  it("the guarantees page shows the fault matrix exactly as the tests run it (regenerate: node dist/test/matrix/table.js)", () => {
    const page = read('docs/guarantees.md');
    const m = /<!-- matrix:start -->\n([\s\S]*?)\n<!-- matrix:end -->/.exec(page);
    assert.ok(m, 'docs/guarantees.md has no <!-- matrix:start --> … <!-- matrix:end --> block');
    assert.equal(m[1], matrixTable());
    assert.ok(PAGES.every((p) => p === 'docs/guarantees.md' || !read(p).includes('<!-- matrix:start -->')), 'the matrix is shown once, in docs/guarantees.md');
  });
});
