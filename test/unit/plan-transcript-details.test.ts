import { strict as assert } from 'node:assert';
import { LEDGER_SHOWN, renderDetails } from '../../workflows/details';
import { assignCallIds } from '../../workflows/plan';
import { toolResultMessage, turnContext, unpairedToolCalls } from '../../workflows/transcript';
import type { Message, PlannedCall, TurnStatus } from '../../workflows/types';
import { entryIn, planned } from './helpers';

const call = (id: string, extra: Partial<PlannedCall> = {}): PlannedCall =>
  planned({ toolCallId: id, arguments: { id }, ...extra });
const ids = (calls: PlannedCall[]): string[] => calls.map((c) => c.toolCallId);

describe('plan: assignCallIds', () => {
  it('leaves distinct, fresh ids alone (same objects, same order)', () => {
    const input = [call('c'), call('a'), call('b')];
    const out = assignCallIds(input, new Set(), 1);
    assert.deepEqual(ids(out), ['c', 'a', 'b']);
    out.forEach((c, i) => assert.equal(c, input[i]));
  });

  const repeats: { name: string; calls: string[]; repeated: string; count: number; want: string[] }[] = [
    { name: 'pair', calls: ['a', 'a'], repeated: 'a', count: 2, want: ['a'] },
    {
      name: 'triple among others',
      calls: ['x', 'a', 'y', 'a', 'a', 'z'],
      repeated: 'a',
      count: 3,
      want: ['x', 'a', 'y', 'z'],
    },
  ];
  for (const c of repeats) {
    it(`repeat within a response (${c.name}): first kept and marked invalid, repeats dropped`, () => {
      const input = c.calls.map((id, i) => call(id, { arguments: { i } }));
      const out = assignCallIds(input, new Set(), 1);
      assert.deepEqual(ids(out), c.want);
      const kept = out.find((p) => p.toolCallId === c.repeated)!;
      assert.deepEqual(kept.arguments, { i: c.calls.indexOf(c.repeated) }, 'the first occurrence is kept');
      assert.match(kept.invalid!, new RegExp(`'${c.repeated}' appears ${c.count} times`));
      for (const p of out) if (p.toolCallId !== c.repeated) assert.equal(p.invalid, undefined);
    });
  }

  it('renames ids reused from an earlier iteration to <id>#<iteration>', () => {
    const out = assignCallIds([call('call_0'), call('call_1'), call('new')], new Set(['call_0', 'call_1']), 3);
    assert.deepEqual(ids(out), ['call_0#3', 'call_1#3', 'new']);
    assert.deepEqual(out[0]!.arguments, { id: 'call_0' });
    assert.equal(out[0]!.invalid, undefined);
  });

  it('renames and marks invalid a repeat that is also a reuse', () => {
    const out = assignCallIds([call('a'), call('a')], new Set(['a']), 2);
    assert.deepEqual(ids(out), ['a#2']);
    assert.match(out[0]!.invalid!, /'a' appears 2 times/);
  });

  it('does not mutate its input', () => {
    const input = [call('a'), call('a')];
    const snapshot = JSON.parse(JSON.stringify(input));
    assignCallIds(input, new Set(['a']), 2);
    assert.deepEqual(input, snapshot);
  });

  it('already-invalid calls keep their reason (also when renamed)', () => {
    const out = assignCallIds(
      [call('a', { invalid: 'unknown tool' }), call('b', { invalid: 'bad args' })],
      new Set(['b']),
      4,
    );
    assert.deepEqual(
      out.map((c) => [c.toolCallId, c.invalid]),
      [
        ['a', 'unknown tool'],
        ['b#4', 'bad args'],
      ],
    );
  });

  it('is deterministic', () => {
    const input = [call('a'), call('b'), call('a')];
    assert.deepEqual(assignCallIds(input, new Set(['b']), 2), assignCallIds(input, new Set(['b']), 2));
  });
});

describe('transcript: unpairedToolCalls', () => {
  const assistant = (...callIds: string[]): Message => ({
    role: 'assistant',
    content: '',
    toolCalls: callIds.map((id) => ({ id, name: 't', arguments: {} })),
  });
  const result = (id: string): Message => ({ role: 'tool', toolCallId: id, name: 't', content: 'ok' });
  const cases: { name: string; messages: Message[]; want: string[] }[] = [
    { name: 'empty', messages: [], want: [] },
    {
      name: 'no tool calls',
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'yo' },
      ],
      want: [],
    },
    {
      name: 'paired',
      messages: [{ role: 'user', content: 'hi' }, assistant('a', 'b'), result('b'), result('a')],
      want: [],
    },
    { name: '0 results', messages: [assistant('a', 'b'), result('a')], want: ['b has 0 results'] },
    { name: '2 results', messages: [assistant('a'), result('a'), result('a')], want: ['a has 2 results'] },
    {
      name: 'across iterations',
      messages: [assistant('a'), result('a'), assistant('b', 'c'), result('c'), result('c')],
      want: ['b has 0 results', 'c has 2 results'],
    },
  ];
  for (const c of cases) it(c.name, () => assert.deepEqual(unpairedToolCalls(c.messages), c.want));
});

describe('transcript: turnContext (what a call of the turn is decided in)', () => {
  const user: Message = { role: 'user', content: 'send the report' };
  const said = (n: number): Message[] =>
    Array.from({ length: n }, (_, i) => ({ role: 'assistant', content: `m${i}` }) as Message);
  const cases: { name: string; messages: Message[]; max: number; want: string[] }[] = [
    { name: 'a short turn whole', messages: [user, ...said(2)], max: 4, want: ['send the report', 'm0', 'm1'] },
    { name: 'exactly max: whole', messages: [user, ...said(3)], max: 4, want: ['send the report', 'm0', 'm1', 'm2'] },
    {
      name: 'longer: the request, then the latest',
      messages: [user, ...said(6)],
      max: 4,
      want: ['send the report', 'm3', 'm4', 'm5'],
    },
    { name: 'no request (a resume turn): the latest', messages: said(6), max: 4, want: ['m2', 'm3', 'm4', 'm5'] },
    { name: 'empty', messages: [], max: 4, want: [] },
  ];
  for (const c of cases)
    it(c.name, () =>
      assert.deepEqual(
        turnContext(c.messages, c.max).map((m) => m.content),
        c.want,
      ),
    );
});

describe('transcript: toolResultMessage', () => {
  const c = { id: 'call_1', name: 'send_email' };
  const cases: { name: string; outcome: { result?: unknown; error?: string }; content: string; isError?: true }[] = [
    { name: 'string result kept as-is', outcome: { result: 'sent "ok"' }, content: 'sent "ok"' },
    { name: 'empty string kept', outcome: { result: '' }, content: '' },
    { name: 'object JSON-stringified', outcome: { result: { id: 1, to: ['a'] } }, content: '{"id":1,"to":["a"]}' },
    { name: 'number', outcome: { result: 0 }, content: '0' },
    { name: 'null', outcome: { result: null }, content: 'null' },
    { name: 'undefined → "null"', outcome: {}, content: 'null' },
    { name: 'error', outcome: { error: 'rejected by bob' }, content: 'Error: rejected by bob', isError: true },
    { name: 'error wins over result', outcome: { result: 'x', error: 'boom' }, content: 'Error: boom', isError: true },
  ];
  for (const t of cases) {
    it(t.name, () => {
      assert.deepEqual(toolResultMessage(c, t.outcome), {
        role: 'tool',
        toolCallId: 'call_1',
        name: 'send_email',
        content: t.content,
        ...(t.isError ? { isError: true } : {}),
      });
    });
  }
});

describe('details: renderDetails', () => {
  const status = (over: Partial<TurnStatus> = {}): TurnStatus => ({
    sessionId: 'sess-1',
    turn: 2,
    state: 'awaiting_approval',
    iteration: 1,
    ledger: [
      entryIn('awaiting_approval', { toolCallId: 'call_a', executionId: 'owx-aaaa', target: 'bob@example.com' }),
      entryIn('recovery_required', {
        toolCallId: 'call|b',
        executionId: 'owx-bbbb',
        tool: 'pipe|tool',
        approvedBy: 'x|y',
        recoveryDecision: 'retry',
        recoveredBy: 'ann',
      }),
    ],
    decisions: [],
    ...over,
  });

  it('contains the state, session, turn and every execution ID', () => {
    const md = renderDetails(status());
    assert.match(md, /\*\*awaiting_approval\*\*/);
    assert.match(md, /Turn 2/);
    assert.match(md, /sess-1/);
    for (const id of ['owx-aaaa', 'owx-bbbb']) assert.ok(md.includes(`\`${id}\``), id);
    assert.match(md, /recovery_required/);
    assert.match(md, /retry by ann/);
    assert.match(md, /bob@example\.com/);
    assert.match(md, /Waiting for a decision/);
  });

  it('a parked turn says so first: the calls that wait and how to decide (#28: the Web UI shows the top)', () => {
    const md = renderDetails(status());
    const [first, , second] = md.split('\n');
    assert.equal(
      first,
      '**Waiting for a person** to decide 2 calls: `call_a` send_email → bob@example.com (approve or reject); `call\\|b` pipe\\|tool (recovery_required: retry, succeeded or failed).',
    );
    assert.match(
      second!,
      /^Waiting for a decision: decide in the approvals app, with `openworker-temporal approve sess-1 <call>`/,
    );
  });

  it('the ledger is a list that wraps, never a table wider than the panel; every column is there', () => {
    const md = renderDetails(status());
    assert.ok(!md.split('\n').some((l) => l.startsWith('|')), 'no table rows');
    assert.ok(
      md.includes(
        '- `call\\|b` pipe\\|tool: **recovery_required** · attempts 0 · approved by x\\|y · retry by ann · `owx-bbbb`',
      ),
      md,
    );
  });

  it(`a long ledger lists ${LEDGER_SHOWN} calls and says how many more and where to see them`, () => {
    const ledger = Array.from({ length: LEDGER_SHOWN + 7 }, (_, i) =>
      entryIn('succeeded', { toolCallId: `c${i}`, executionId: `owx-${i}` }),
    );
    const md = renderDetails(status({ state: 'running', ledger }));
    assert.match(md, new RegExp(`\\*\\*Ledger\\*\\* \\(${LEDGER_SHOWN + 7} calls\\)`));
    assert.equal(md.split('\n').filter((l) => l.startsWith('- `c')).length, LEDGER_SHOWN);
    assert.match(
      md,
      /…and 7 more: the turn's `status` query \(Queries tab\) or `openworker-temporal show sess-1` lists every call\./,
    );
  });

  it('flattens newlines and escapes | in the error', () => {
    const md = renderDetails(status({ state: 'failed', error: 'bad|thing\nhappened', ledger: [] }));
    assert.match(md, /\*\*failed\*\*/);
    assert.ok(md.includes('Error: bad\\|thing happened'));
    assert.ok(!md.includes('**Ledger**'));
    assert.ok(!md.includes('Waiting for a decision'));
  });

  it('a retry waiting out its fence says until when, and is not "waiting for a decision"', () => {
    const fenced = entryIn('recovery_required', { toolCallId: 'call_f', executionId: 'owx-ffff' });
    fenced.events.push({
      at: '2024-01-01T00:00:01.000Z',
      type: 'retry_fenced',
      until: '2024-01-01T10:42:07.000Z',
      attempt: 1,
      by: 'ann',
    });
    const md = renderDetails(status({ state: 'recovery_required', ledger: [fenced] }));
    assert.match(md, /`call_f`: retry decided by ann, waiting out attempt 1 until 2024-01-01 10:42:07 UTC/);
    assert.ok(!md.includes('Waiting for a decision'));
  });

  it('decisions that were not applied are listed with why (a signal cannot answer its sender), the latest five', () => {
    const decisions = Array.from({ length: 7 }, (_, i) => ({
      at: `2024-01-01T00:00:0${i}.000Z`,
      kind: 'approve' as const,
      toolCallId: i === 6 ? 'call|z' : 'call_a',
      by: 'ann',
      outcome: 'ignored' as const,
      why: i === 6 ? 'arguments changed:\nreload' : `stale ${i}`,
    }));
    const md = renderDetails(
      status({ decisions: [...decisions, { ...decisions[0]!, outcome: 'applied', why: undefined }] }),
    );
    assert.match(md, /\*\*Decisions not applied\*\* \(latest last\)/);
    const rows = md.split('\n').filter((l) => /^- 2024-01-01/.test(l));
    assert.equal(rows.length, 5);
    assert.equal(rows[0], '- 2024-01-01 00:00:02 UTC approve `call_a` by ann: stale 2');
    assert.equal(rows[4], '- 2024-01-01 00:00:06 UTC approve `call\\|z` by ann: arguments changed: reload');
    assert.ok(!renderDetails(status()).includes('not applied**'), 'nothing listed when every decision applied');
  });

  it('an invariant violation is shown loudly', () => {
    const parked = entryIn('recovery_required', { toolCallId: 'call_v' });
    parked.events.push({
      at: '2024-01-01T00:00:01.000Z',
      type: 'invariant_violated',
      attempted: 'scheduled',
      from: 'dispatched',
    });
    assert.match(
      renderDetails(status({ ledger: [parked] })),
      /\*\*Ledger invariant violated\*\* .*call_v: 'scheduled' in state 'dispatched'/,
    );
  });

  it('no waiting hint when nothing waits', () => {
    const md = renderDetails(status({ state: 'running', ledger: [entryIn('running', { executionId: 'owx-cccc' })] }));
    assert.ok(md.includes('`owx-cccc`'));
    assert.ok(!md.includes('Waiting for a decision'));
  });
});
