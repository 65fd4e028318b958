import { strict as assert } from 'node:assert';
import type { Disposition } from '../../client/importPlan';
import { ImportError, planImport } from '../../client/importPlan';
import { unpairedToolCalls } from '../../workflows/transcript';

const jsonl = (...lines: unknown[]) => lines.map((l) => JSON.stringify(l)).join('\n');
const user = (content: string) => ({ role: 'user', content });
const call = (id: string, openworker?: Record<string, unknown>) => ({
  id,
  type: 'function',
  function: { name: 'send_email', arguments: JSON.stringify({ to: `${id}@example.com` }) },
  ...(openworker ? { openworker } : {}),
});
const asks = (...calls: unknown[]) => ({ role: 'assistant', content: null, tool_calls: calls });
const result = (id: string) => ({ role: 'tool', tool_call_id: id, content: '{"ok":true}' });

describe('import: trailing shapes', () => {
  const cases: { name: string; file: string; pending: [string, Disposition][]; why?: RegExp }[] = [
    { name: 'no tool calls', file: jsonl(user('hi'), { role: 'assistant', content: 'hello' }), pending: [] },
    { name: 'every call answered', file: jsonl(user('send'), asks(call('a')), result('a')), pending: [] },
    {
      name: 'unanswered, approval resolved',
      file: jsonl(user('send'), asks(call('a', { approval: 'approved', by: 'ann' }))),
      pending: [['a', 'recovery_required']],
      why: /approved before the import, with no result: it may have run/,
    },
    {
      name: 'unanswered, nothing known',
      file: jsonl(user('send'), asks(call('a'))),
      pending: [['a', 'recovery_required']],
      why: /nothing proves it never ran/,
    },
    {
      name: 'unanswered, never approved',
      file: jsonl(user('send'), asks(call('a', { approval: 'pending' }))),
      pending: [['a', 'awaiting_approval']],
      why: /cannot have run/,
    },
    {
      name: 'approved, marked never dispatched',
      file: jsonl(user('send'), asks(call('a', { approval: 'approved', dispatched: false }))),
      pending: [['a', 'run']],
    },
    {
      name: 'marked never dispatched, not approved',
      file: jsonl(user('send'), asks(call('a', { dispatched: false }))),
      pending: [['a', 'awaiting_approval']],
    },
    {
      name: 'rejected',
      file: jsonl(user('send'), asks(call('a', { approval: 'rejected', by: 'bo' }))),
      pending: [['a', 'rejected']],
      why: /rejected before the import by bo/,
    },
    {
      name: 'marked dispatched, approval pending',
      file: jsonl(user('send'), asks(call('a', { approval: 'pending', dispatched: true }))),
      pending: [['a', 'recovery_required']],
      why: /marked dispatched/,
    },
    {
      name: 'marked dispatched, rejected',
      file: jsonl(user('send'), asks(call('a', { approval: 'rejected', dispatched: true }))),
      pending: [['a', 'recovery_required']],
      why: /marked dispatched/,
    },
    {
      name: 'one of two answered',
      file: jsonl(user('send'), asks(call('a'), call('b', { approval: 'pending' })), result('a')),
      pending: [['b', 'awaiting_approval']],
    },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.pending.map(([id, d]) => `${id}: ${d}`).join(', ') || 'nothing pending'}`, () => {
      const plan = planImport(c.file);
      assert.deepEqual(
        plan.pending.map((p) => [p.call.id, p.disposition]),
        c.pending,
      );
      if (c.why) assert.match(plan.pending[0]!.why, c.why);
      // What is not pending is a valid transcript; the pending calls are the only unpaired ones.
      assert.deepEqual(unpairedToolCalls(plan.transcript).length, c.pending.length);
    });
  }

  it('a call left without a result mid-conversation gets an "outcome unknown" result and a note', () => {
    const plan = planImport(
      jsonl(user('send'), asks(call('a', { approval: 'approved' })), user('anything else?'), {
        role: 'assistant',
        content: 'no',
      }),
    );
    assert.deepEqual(plan.pending, []);
    assert.deepEqual(unpairedToolCalls(plan.transcript), []);
    assert.equal(plan.transcript[2]!.role, 'tool');
    assert.match(
      plan.notes.join('\n'),
      /line 2: tool call a \(send_email\) has no result and the conversation moved on/,
    );
  });

  it('system messages are left out with a note; content parts become text; arguments are parsed', () => {
    const plan = planImport(
      jsonl(
        { role: 'system', content: 'be nice' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'he' },
            { type: 'text', text: 'llo' },
          ],
        },
        asks(call('a')),
      ),
    );
    assert.deepEqual(plan.transcript[0], { role: 'user', content: 'hello' });
    assert.deepEqual(plan.pending[0]!.call, { id: 'a', name: 'send_email', arguments: { to: 'a@example.com' } });
    assert.match(plan.notes[0]!, /line 1: system message left out/);
  });
});

describe('import: bad files, one line naming the line', () => {
  const cases = [
    {
      name: 'not JSON',
      file: `${JSON.stringify(user('hi'))}\n{oops`,
      why: /^line 2: not JSON; expected one chat message per line$/,
    },
    { name: 'unknown role', file: jsonl({ role: 'robot', content: 'x' }), why: /^line 1: unknown role "robot"/ },
    {
      name: 'result for an unknown call',
      file: jsonl(user('x'), result('zz')),
      why: /^line 2: a tool result for unknown call zz$/,
    },
    {
      name: 'a second result',
      file: jsonl(user('x'), asks(call('a')), result('a'), result('a')),
      why: /^line 4: a second result for tool call a$/,
    },
    {
      name: 'arguments not JSON',
      file: jsonl(asks({ id: 'a', function: { name: 'f', arguments: '{x' } })),
      why: /^line 1: tool call a has arguments that are not JSON$/,
    },
    {
      name: 'a call id used twice',
      file: jsonl(asks(call('a')), result('a'), asks(call('a'))),
      why: /^line 3: tool call id a is used twice$/,
    },
    {
      name: 'a result after another message',
      file: jsonl(user('x'), asks(call('a')), user('never mind'), result('a')),
      why: /^line 4: the result for tool call a comes after other messages; results must directly follow their assistant message$/,
    },
    {
      name: 'a call without a name',
      file: jsonl(asks({ id: 'a', function: {} })),
      why: /^line 1: tool call a has no function name$/,
    },
  ];
  for (const c of cases)
    it(c.name, () =>
      assert.throws(
        () => planImport(c.file),
        (err: Error) => err instanceof ImportError && c.why.test(err.message),
      ),
    );
});
