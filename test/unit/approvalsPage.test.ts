import { strict as assert } from 'node:assert';
import { PAGE_HTML, PAGE_JS } from '../../apps/approvals/page';

// The page ships as strings: a stray backtick or quote in them breaks it only in the browser.

describe('approvals page', () => {
  it('its script parses, and renders untrusted text only as text', () => {
    assert.doesNotThrow(() => new Function(PAGE_JS));
    assert.ok(!/innerHTML|insertAdjacentHTML|outerHTML|document\.write/.test(PAGE_JS));
  });
  it('loads its script and style from itself only (the CSP allows nothing else)', () => {
    const loaded = [...PAGE_HTML.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(loaded, ['/app.css', '/app.js']);
  });
});
