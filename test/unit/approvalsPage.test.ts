import { strict as assert } from 'node:assert';
import { PAGE_HTML, PAGE_JS } from '../../apps/approvals/page';

// The page ships as strings: a stray backtick or quote in them breaks it only in the browser.

describe('approvals page', () => {
  it('its script parses, and renders untrusted text only as text', () => {
    assert.doesNotThrow(() => new Function(PAGE_JS));
    assert.ok(!/innerHTML|insertAdjacentHTML|outerHTML|document\.write/.test(PAGE_JS));
  });
  it('its inbox names the turns it could not read in a banner, above the calls it could (#40)', () => {
    // The least of a DOM the inbox needs: elements that keep their children and say their text.
    class Node {
      kids: unknown[] = [];
      append(...k: unknown[]) {
        this.kids.push(...k);
      }
      replaceChildren(...k: unknown[]) {
        this.kids = k;
      }
      get textContent(): string {
        return this.kids.map((k) => (k instanceof Node ? k.textContent : String(k))).join('');
      }
    }
    const main = new Node();
    const document = { getElementById: () => main, createElement: () => new Node(), activeElement: null };
    const window = { addEventListener: () => undefined };
    const fetch = () => new Promise(() => undefined); // the page's own sign-in check never answers here
    const renderInbox = new Function('document', 'window', 'fetch', 'Node', `${PAGE_JS}; return renderInbox;`)(
      document,
      window,
      fetch,
      Node,
    ) as (l: unknown) => void;
    const unreadable = [{ workflowId: 'session-s2-turn-3', why: "payload encrypted with key 'k1'" }];
    renderInbox({ calls: [], unreadable });
    assert.match(main.textContent, /^Waiting for a decision \(0\)1 waiting turn\(s\) could not be read; /);
    assert.match(
      main.textContent,
      /session-s2-turn-3: payload encrypted with key 'k1'No waiting call could be read\.$/,
    );
    renderInbox({ calls: [], unreadable: [] });
    assert.equal(main.textContent, 'Waiting for a decision (0)Nothing is waiting.');
  });
  it('loads its script and style from itself only (the CSP allows nothing else)', () => {
    const loaded = [...PAGE_HTML.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(loaded, ['/app.css', '/app.js']);
  });
});
