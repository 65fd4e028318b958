import { strict as assert } from 'node:assert';
import { formatInbox } from '../../cli/format';
import { inboxItemOf, type InboxItem, type UnreadableTurn } from '../../client/inspect';
import { inboxRowOf } from '../../workflows/inboxRows';
import { newEntry } from '../../workflows/ledger';
import { AT, planned } from './helpers';

// `inbox` as text: the calls it could read, then every waiting turn it could not, with a count;
// "inbox is empty" only when nothing waits at all (#40: an unreadable turn never vanishes).

const call: InboxItem = inboxItemOf(
  { sessionId: 's1', turn: 1 },
  'session-s1-turn-1',
  inboxRowOf({ ...newEntry(planned(), 'owx-1', 1, AT), state: 'awaiting_approval' }, []),
);
const lost: UnreadableTurn = { workflowId: 'session-s2-turn-3', why: "payload encrypted with key 'k1'" };
const gone: UnreadableTurn = { workflowId: 'session-s3-turn-1', why: 'payload ab12 is not in the payload store' };

const CASES: { name: string; calls: InboxItem[]; unreadable: UnreadableTurn[]; lines: RegExp[]; not?: RegExp }[] = [
  { name: 'nothing waits', calls: [], unreadable: [], lines: [/^inbox is empty: /], not: /could not be read/ },
  {
    name: 'every turn read',
    calls: [call],
    unreadable: [],
    lines: [/^awaiting_approval .* call_1 {2}send_email/],
    not: /could not be read/,
  },
  {
    name: 'no turn read',
    calls: [],
    unreadable: [lost, gone],
    lines: [
      /^2 waiting turn\(s\) could not be read; their calls are not listed:$/,
      /^ {2}unreadable {2}session-s2-turn-3: payload encrypted with key 'k1'$/,
      /^ {2}unreadable {2}session-s3-turn-1: payload ab12 is not in the payload store$/,
    ],
    not: /inbox is empty/,
  },
  {
    name: 'some read, one not',
    calls: [call],
    unreadable: [lost],
    lines: [
      /^awaiting_approval .* call_1 {2}send_email/,
      /^1 waiting turn\(s\) could not be read; their calls are not listed above:$/,
      /^ {2}unreadable {2}session-s2-turn-3: /,
    ],
  },
];

describe('inbox text names every turn it could not read', () => {
  for (const c of CASES)
    it(c.name, () => {
      const text = formatInbox(c.calls, c.unreadable);
      const lines = text.split('\n').filter((l) => !l.startsWith('    '));
      assert.equal(lines.length, c.lines.length, text);
      c.lines.forEach((re, i) => assert.match(lines[i]!, re));
      if (c.not) assert.doesNotMatch(text, c.not);
    });
});
