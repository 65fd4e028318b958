import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { matrixTable } from '../matrix/table';

// The README's "Guarantees" table is generated from the matrix (test/matrix/cells.ts): they must agree.

describe('README', () => {
  it('shows the fault matrix exactly as the tests run it (regenerate: node dist/test/matrix/table.js)', () => {
    const readme = readFileSync(join(__dirname, '..', '..', '..', 'README.md'), 'utf8');
    const m = /<!-- matrix:start -->\n([\s\S]*?)\n<!-- matrix:end -->/.exec(readme);
    assert.ok(m, 'README.md has no <!-- matrix:start --> … <!-- matrix:end --> block');
    assert.equal(m[1], matrixTable());
  });
});
