import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelProvider, ModelResponse } from '../../activities/model';
import { ModelError } from '../../activities/model';
import { demoModel } from '../../activities/models/demo';
import { MODEL_SPECS, loadModel } from '../../activities/models/index';
import type { Script } from '../../activities/models/scripted';
import { loadScript, scriptedModel } from '../../activities/models/scripted';
import type { Message } from '../../workflows/types';

const signal = new AbortController().signal;
const ask = (model: ModelProvider, messages: Message[]): Promise<ModelResponse> =>
  model.generate({ sessionId: 's', turn: 1, iteration: 1, messages, tools: [] }, { signal });

const user = (content: string): Message => ({ role: 'user', content });
const assistant = (content = ''): Message => ({ role: 'assistant', content });
const toolMsg = (content: string, isError = false): Message => ({
  role: 'tool',
  toolCallId: 'call_1',
  name: 'send_email',
  content,
  ...(isError ? { isError } : {}),
});

const SCRIPT: Script = {
  steps: [
    {
      text: 'step zero',
      toolCalls: [
        { id: 'a', name: 'lookup', arguments: { q: 1 } },
        { id: 'b', name: 'noargs', arguments: null },
      ],
    },
    { text: 'step one' },
    { toolCalls: [] },
  ],
};

describe('models: scripted', () => {
  const model = scriptedModel(SCRIPT, 'demo.json');
  const cases: { name: string; messages: Message[]; want: ModelResponse }[] = [
    {
      name: 'no assistant messages → step 0 (arguments default to {})',
      messages: [user('hi')],
      want: {
        text: 'step zero',
        toolCalls: [
          { id: 'a', name: 'lookup', arguments: { q: 1 } },
          { id: 'b', name: 'noargs', arguments: {} },
        ],
      },
    },
    {
      name: 'one assistant message → step 1',
      messages: [user('hi'), assistant(), toolMsg('ok')],
      want: { text: 'step one', toolCalls: [] },
    },
    {
      name: 'tool/user messages do not count',
      messages: [user('a'), user('b'), toolMsg('x'), assistant(), user('c')],
      want: { text: 'step one', toolCalls: [] },
    },
    {
      name: 'two assistant messages → step 2 (text defaults to "")',
      messages: [assistant(), assistant()],
      want: { text: '', toolCalls: [] },
    },
  ];
  for (const c of cases) it(c.name, async () => assert.deepEqual(await ask(model, c.messages), c.want));

  it('is named after its source', () => assert.equal(model.name, 'scripted:demo.json'));

  it('running out of steps → ModelError naming the step', async () => {
    await assert.rejects(ask(model, [assistant(), assistant(), assistant()]), (err: unknown) => {
      assert.ok(err instanceof ModelError);
      assert.equal(err.retryable, false);
      assert.match(err.message, /demo\.json has 3 steps but model call #4 needs step 3/);
      return true;
    });
  });
});

describe('models: loadScript', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'ow-unit-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, content: string): string => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };

  it('loads a valid script', () => {
    const path = file('ok.json', JSON.stringify(SCRIPT));
    assert.equal(loadScript(path).steps.length, 3);
  });

  const errors: { name: string; content?: string; problem: RegExp }[] = [
    { name: 'missing file', problem: /cannot read the script \(ENOENT/ },
    { name: 'bad JSON', content: '{"steps": [oops', problem: /cannot read the script/ },
    { name: 'empty file', content: '', problem: /cannot read the script/ },
    { name: 'no steps', content: '{}', problem: /steps: .*expected \{ "steps"/ },
    { name: 'steps not an array', content: '{"steps": {}}', problem: /steps: / },
    {
      name: 'tool call without id',
      content: '{"steps": [{"toolCalls": [{"name": "x"}]}]}',
      problem: /steps\.0\.toolCalls\.0\.id: /,
    },
    { name: 'text not a string', content: '{"steps": [{"text": 1}]}', problem: /steps\.0\.text: / },
    { name: 'top-level array', content: '[]', problem: /file: / },
  ];
  for (const c of errors) {
    it(`${c.name} → one line naming the file`, () => {
      const path =
        c.content === undefined
          ? join(dir, 'does-not-exist.json')
          : file(`${c.name.replace(/\W/g, '_')}.json`, c.content);
      assert.throws(
        () => loadScript(path),
        (err: unknown) => {
          assert.ok(err instanceof Error);
          assert.ok(err.message.startsWith(`\`model\` scripted:${path}: `), err.message);
          assert.match(err.message, c.problem);
          assert.ok(!err.message.includes('\n'), `multi-line: ${JSON.stringify(err.message)}`);
          return true;
        },
      );
    });
  }
});

describe('models: demo', () => {
  const model = demoModel();
  const emails: { text: string; to: string; subject: string }[] = [
    { text: 'email bob@example.com about the launch', to: 'bob@example.com', subject: 'The launch' },
    { text: 'Please e-mail ann@corp.io re: budget!', to: 'ann@corp.io', subject: 'Budget' },
    { text: 'write to x@y.com saying hi', to: 'x@y.com', subject: 'Hi' },
    { text: 'send an email to eve@x.org.', to: 'eve@x.org', subject: 'Hello' },
  ];
  for (const c of emails) {
    it(`"${c.text}" → one send_email call to ${c.to}`, async () => {
      const res = await ask(model, [user(c.text)]);
      assert.equal(res.toolCalls.length, 1);
      const call = res.toolCalls[0]!;
      assert.equal(call.name, 'send_email');
      assert.equal(call.id, 'call_1');
      const args = call.arguments as { to: string; subject: string; body: string };
      assert.equal(args.to, c.to);
      assert.equal(args.subject, c.subject);
      assert.equal(typeof args.body, 'string');
      assert.ok(res.text.includes(c.to));
    });
  }

  it('numbers call ids by assistant messages so far', async () => {
    const res = await ask(model, [user('hi'), assistant('help'), user('email bob@example.com about x')]);
    assert.equal(res.toolCalls[0]!.id, 'call_2');
  });

  const replies: { name: string; messages: Message[]; text: RegExp }[] = [
    {
      name: 'tool result → summary',
      messages: [user('email bob@example.com'), assistant(), toolMsg('{"id":1}')],
      text: /^Done: send_email succeeded\.$/,
    },
    {
      name: 'tool error → did not run',
      messages: [user('x'), assistant(), toolMsg('Error: rejected by bob', true)],
      text: /^send_email did not run: rejected by bob$/,
    },
    { name: 'other text → help', messages: [user('what is the weather?')], text: /demo model.*email bob@example\.com/ },
    { name: 'no messages → help', messages: [], text: /demo model/ },
  ];
  for (const c of replies) {
    it(c.name, async () => {
      const res = await ask(model, c.messages);
      assert.deepEqual(res.toolCalls, []);
      assert.match(res.text, c.text);
    });
  }
});

describe('models: loadModel', () => {
  it("'demo' → the demo model", () => assert.equal(loadModel('demo', {}).name, 'demo'));
  it("'nope' → error listing valid specs", () => {
    assert.throws(
      () => loadModel('nope', {}),
      (err: unknown) => {
        assert.ok(err instanceof Error);
        assert.match(err.message, /unknown `model` 'nope'/);
        for (const spec of MODEL_SPECS) assert.ok(err.message.includes(spec), spec);
        return true;
      },
    );
  });
  it("'scripted:' without a file → error", () => assert.throws(() => loadModel('scripted:', {}), /needs a file path/));
  it("'scripted:<missing>' → loadScript error", () =>
    assert.throws(
      () => loadModel('scripted:/nonexistent/x.json', {}),
      /`model` scripted:\/nonexistent\/x\.json: cannot read/,
    ));
});
