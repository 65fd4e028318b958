import { strict as assert } from 'node:assert';
import { z } from 'zod';
import { createRegistry } from '../../activities/registry';
import type { ToolConfig } from '../../activities/tool';
import { defineTool, isTool } from '../../activities/tool';
import type { ToolCall } from '../../workflows/types';
import { spec } from './helpers';

const Email = z.object({ to: z.string().email(), subject: z.string().min(1), body: z.string().optional() });

const sendEmail = defineTool({
  name: 'send_email',
  description: 'Send an email',
  input: Email,
  target: (i) => i.to,
  execute: async () => ({ sent: true }),
});
const lookup = defineTool({
  name: 'lookup',
  description: 'Look something up',
  effect: 'read',
  input: z.object({ q: z.string() }),
  target: () => {
    throw new Error('target blew up');
  },
  execute: (i) => i.q,
});
const charge = defineTool({
  name: 'charge',
  description: 'Charge a card',
  input: z.object({ cents: z.number().int() }),
  recovery: 'reconcile',
  reconcile: () => ({ status: 'not_applied' as const }),
  maxAttempts: 2,
  timeouts: { startToClose: '2s', heartbeat: 750 },
  execute: () => 'ok',
});

describe('tool: defineTool defaults', () => {
  const cases: { name: string; tool: ReturnType<typeof defineTool>; want: Record<string, unknown> }[] = [
    {
      name: 'external',
      tool: sendEmail,
      want: { effect: 'external', requiresApproval: true, recovery: 'manual', maxAttempts: 5, local: false },
    },
    {
      name: 'read',
      tool: lookup,
      want: { effect: 'read', requiresApproval: false, recovery: 'manual', maxAttempts: 3, local: true },
    },
    {
      name: 'read as its own activity',
      tool: defineTool({
        name: 'r',
        description: 'd',
        input: z.object({}),
        effect: 'read',
        local: false,
        execute: () => 1,
      }),
      want: { effect: 'read', local: false },
    },
    {
      name: 'explicit',
      tool: charge,
      want: { effect: 'external', requiresApproval: true, recovery: 'reconcile', maxAttempts: 2 },
    },
    {
      name: 'external without approval',
      tool: defineTool({
        name: 'n',
        description: 'd',
        input: z.object({}),
        requiresApproval: false,
        recovery: 'idempotent',
        execute: () => 1,
      }),
      want: { requiresApproval: false, recovery: 'idempotent', maxAttempts: 5 },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      for (const [k, v] of Object.entries(c.want))
        assert.equal((c.tool as unknown as Record<string, unknown>)[k], v, k);
      assert.equal(c.tool.kind, 'openworker-tool');
      assert.ok(isTool(c.tool));
      assert.ok(Object.isFrozen(c.tool));
    });
  }

  it('isTool rejects look-alikes', () => {
    for (const v of [null, undefined, {}, 'tool', { kind: 'other' }]) assert.equal(isTool(v), false);
  });
});

describe('tool: defineTool validation', () => {
  const ok = { name: 'my_tool', description: 'does things', input: z.object({}), execute: () => 1 };
  const cases: { name: string; config: Record<string, unknown>; problem: RegExp }[] = [
    { name: 'empty name', config: { ...ok, name: '' }, problem: /name must be 1-64/ },
    { name: 'name with spaces', config: { ...ok, name: 'my tool' }, problem: /name must be 1-64/ },
    { name: 'name too long', config: { ...ok, name: 'x'.repeat(65) }, problem: /name must be 1-64/ },
    { name: 'name not a string', config: { ...ok, name: 42 }, problem: /name must be 1-64/ },
    { name: 'missing description', config: { ...ok, description: undefined }, problem: /description is required/ },
    { name: 'blank description', config: { ...ok, description: '   ' }, problem: /description is required/ },
    { name: 'input not zod', config: { ...ok, input: { type: 'object' } }, problem: /input must be a zod schema/ },
    { name: 'missing input', config: { ...ok, input: undefined }, problem: /input must be a zod schema/ },
    { name: 'missing execute', config: { ...ok, execute: undefined }, problem: /execute\(input, ctx\) is required/ },
    { name: 'execute not a function', config: { ...ok, execute: 'run' }, problem: /execute\(input, ctx\) is required/ },
    { name: 'bad effect', config: { ...ok, effect: 'write' }, problem: /effect must be 'read' or 'external'/ },
    {
      name: 'bad recovery',
      config: { ...ok, recovery: 'retry' },
      problem: /recovery must be 'manual', 'idempotent' or 'reconcile'/,
    },
    {
      name: 'reconcile without fn',
      config: { ...ok, recovery: 'reconcile' },
      problem: /recovery 'reconcile' needs a reconcile/,
    },
    { name: 'maxAttempts 0', config: { ...ok, maxAttempts: 0 }, problem: /maxAttempts must be a positive integer/ },
    { name: 'maxAttempts 1.5', config: { ...ok, maxAttempts: 1.5 }, problem: /maxAttempts must be a positive integer/ },
    {
      name: 'maxAttempts string',
      config: { ...ok, maxAttempts: '3' },
      problem: /maxAttempts must be a positive integer/,
    },
    {
      name: 'local external tool',
      config: { ...ok, local: true },
      problem: /local applies to reads only/,
    },
    { name: 'maxAttempts NaN', config: { ...ok, maxAttempts: NaN }, problem: /maxAttempts must be a positive integer/ },
  ];
  for (const c of cases) {
    it(`${c.name} → TypeError naming the tool and the problem`, () => {
      assert.throws(
        () => defineTool(c.config as unknown as ToolConfig<z.ZodType, unknown>),
        (err: unknown) => {
          assert.ok(err instanceof TypeError, String(err));
          assert.match(err.message, c.problem);
          assert.ok(err.message.startsWith(`defineTool(${JSON.stringify(c.config.name)}): `), err.message);
          return true;
        },
      );
    });
  }

  it('non-object config → TypeError', () => {
    assert.throws(() => defineTool(null as unknown as ToolConfig<z.ZodType, unknown>), TypeError);
  });
});

describe('registry: createRegistry', () => {
  it('rejects duplicate tool names', () => {
    assert.throws(() => createRegistry([sendEmail, lookup, sendEmail]), /two tools are named 'send_email'/);
  });
  it('rejects things that are not tools', () => {
    assert.throws(() => createRegistry([{ name: 'x' } as never]), /not a tool.*defineTool/);
  });
  it('rejects a bad duration at startup', () => {
    const bad = defineTool({
      name: 'slow',
      description: 'd',
      input: z.object({}),
      effect: 'read',
      timeouts: { startToClose: 'forever' },
      execute: () => 1,
    });
    assert.throws(() => createRegistry([bad]));
  });
  it('names() and get()', () => {
    const r = createRegistry([sendEmail, lookup]);
    assert.deepEqual(r.names(), ['send_email', 'lookup']);
    assert.equal(r.get('lookup'), lookup);
    assert.equal(r.get('nope'), undefined);
  });
});

describe('registry: plan', () => {
  const registry = createRegistry([sendEmail, lookup, charge]);
  const plan1 = (c: Partial<ToolCall> | Record<string, unknown>) => registry.plan([c as ToolCall])[0]!;
  const good = { id: 'c1', name: 'send_email', arguments: { to: 'bob@example.com', subject: 'Hi' } };

  const cases: {
    name: string;
    call: Record<string, unknown>;
    invalid?: RegExp;
    check?: (p: ReturnType<typeof plan1>) => void;
  }[] = [
    {
      name: 'unknown tool lists available tools',
      call: { id: 'c', name: 'rm_rf', arguments: {} },
      invalid: /unknown tool 'rm_rf'; available tools: send_email, lookup, charge/,
    },
    { name: 'missing name', call: { id: 'c', arguments: {} }, invalid: /unknown tool 'undefined'/ },
    {
      name: 'invalid args name the field',
      call: { ...good, arguments: { to: 'not-an-email', subject: 'Hi' } },
      invalid: /invalid arguments for 'send_email': to: /,
    },
    { name: 'missing field named', call: { ...good, arguments: { to: 'bob@example.com' } }, invalid: /subject: / },
    {
      name: 'non-object args',
      call: { ...good, arguments: 7 },
      invalid: /invalid arguments for 'send_email': \(input\): /,
    },
    {
      name: 'malformed JSON string',
      call: { ...good, arguments: '{"to": ' },
      invalid: /arguments for 'send_email' are not valid JSON/,
    },
    {
      name: 'JSON-string arguments parsed',
      call: { ...good, arguments: '{"subject":"Hi","to":"bob@example.com"}' },
      check: (p) => {
        assert.deepEqual(p.arguments, { subject: 'Hi', to: 'bob@example.com' });
        assert.equal(p.argsDigest, registry.plan([good as ToolCall])[0]!.argsDigest);
      },
    },
    { name: 'blank JSON string → {}', call: { id: 'c', name: 'lookup', arguments: '  ' }, invalid: /q: / },
    {
      name: 'missing arguments → {}',
      call: { id: 'c', name: 'charge' },
      check: (p) => assert.deepEqual(p.arguments, {}),
      invalid: /cents/,
    },
    {
      name: 'missing id → call_missing_<i>',
      call: { name: 'lookup', arguments: { q: 'x' } },
      check: (p) => assert.equal(p.toolCallId, 'call_missing_0'),
    },
    {
      name: 'empty id → call_missing_<i>',
      call: { id: '', name: 'lookup', arguments: { q: 'x' } },
      check: (p) => assert.equal(p.toolCallId, 'call_missing_0'),
    },
    { name: 'target computed', call: good, check: (p) => assert.equal(p.target, 'bob@example.com') },
    {
      name: 'throwing target ignored',
      call: { id: 'c', name: 'lookup', arguments: { q: 'x' } },
      check: (p) => assert.equal('target' in p, false),
    },
    {
      name: 'default spec fields',
      call: good,
      // The unit tests' spec() is the documented default for an external tool.
      check: (p) => assert.deepEqual(p.spec, spec()),
    },
    {
      name: 'custom timeouts and reconcile',
      call: { id: 'c', name: 'charge', arguments: { cents: 100 } },
      check: (p) =>
        assert.deepEqual(
          [p.spec?.startToCloseMs, p.spec?.heartbeatMs, p.spec?.hasReconcile, p.spec?.maxAttempts],
          [2000, 750, true, 2],
        ),
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const p = plan1(c.call);
      assert.match(p.argsDigest, /^sha256:[0-9a-f]{64}$/);
      if (c.invalid) assert.match(p.invalid ?? '', c.invalid);
      else assert.equal(p.invalid, undefined, p.invalid);
      c.check?.(p);
    });
  }

  it('numbers missing ids by position and never throws on junk', () => {
    const out = registry.plan([
      good,
      { name: 'lookup', arguments: { q: 'a' } },
      null,
      undefined,
      'junk',
    ] as unknown as ToolCall[]);
    assert.deepEqual(
      out.map((p) => p.toolCallId),
      ['c1', 'call_missing_1', 'call_missing_2', 'call_missing_3', 'call_missing_4'],
    );
    assert.ok(out.slice(2).every((p) => p.invalid));
  });

  it('invalid args still carry the spec (so the ledger knows the tool)', () => {
    assert.equal(plan1({ ...good, arguments: {} }).spec?.name, 'send_email');
  });
});

describe('registry: descriptors', () => {
  const registry = createRegistry([sendEmail, lookup, charge]);
  it('one per tool with a JSON schema of the zod fields', () => {
    const d = registry.descriptors();
    assert.deepEqual(
      d.map((x) => x.name),
      ['send_email', 'lookup', 'charge'],
    );
    const email = d[0]!;
    assert.equal(email.description, 'Send an email');
    assert.equal(email.inputSchema.type, 'object');
    assert.deepEqual(Object.keys(email.inputSchema.properties as object).sort(), ['body', 'subject', 'to']);
    assert.deepEqual((email.inputSchema.required as string[]).sort(), ['subject', 'to']);
  });
  it('never mentions an execution ID or runtime policy', () => {
    const text = JSON.stringify(registry.descriptors());
    for (const word of [/execution/i, /owx-/, /recovery/i, /maxAttempts/, /requiresApproval/])
      assert.doesNotMatch(text, word);
    for (const d of registry.descriptors())
      assert.deepEqual(Object.keys(d).sort(), ['description', 'inputSchema', 'name']);
  });
});
