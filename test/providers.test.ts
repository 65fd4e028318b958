import { strict as assert } from 'node:assert';
import { useFakeModelServer } from './support/fakeModelServer';
import { runCli } from './support/processes';
import { startTurn, turnClosed, uniq } from './support/scenario';
import { useWorld } from './support/world';

// Real provider client code (the AI SDK) in a real worker process, against a local server that speaks
// OpenAI's Chat Completions wire protocol: tool calls round-trip, and each error class behaves as
// docs/tools-and-models.md ("Models") says (retried, honouring Retry-After, or a clear terminal message).

describe('model providers (AI SDK) against local servers speaking the OpenAI and Anthropic protocols', function () {
  this.timeout(120_000);
  const w = useWorld();
  const fake = useFakeModelServer();

  const compatible = () => w.worker(fake.spec());
  const closed = (t: { workflowId: string }) => turnClosed(w.c, t);

  it('a tool call round-trips: JSON schema out, the call and its result back in, never an execution ID', async () => {
    await compatible();
    fake.enqueue(
      { text: 'Looking Ada up.', toolCalls: [{ id: 'call_a', name: 'lookup_contact', arguments: { name: 'Ada' } }] },
      { text: 'Ada is ada@example.com.' },
    );
    const done = await closed(await startTurn(w.c, uniq('prov'), 'what is Ada’s email?'));
    assert.equal(done.state, 'completed', done.error);
    assert.equal(done.text, 'Ada is ada@example.com.');
    assert.equal(fake.requests.length, 2);
    const [first, second] = fake.requests.map((r) => r.body);
    assert.equal(first!.model, 'fake-model');
    const lookup = first!.tools?.find((t) => t.function.name === 'lookup_contact');
    assert.ok(lookup, JSON.stringify(first!.tools));
    assert.deepEqual((lookup.function.parameters as { properties: unknown }).properties, {
      name: { type: 'string', minLength: 1 },
    });
    const call = second!.messages.find((m) => m.role === 'assistant')?.tool_calls?.[0];
    assert.equal(call?.id, 'call_a');
    assert.deepEqual(JSON.parse(call!.function.arguments), { name: 'Ada' });
    const result = second!.messages.find((m) => m.role === 'tool');
    assert.equal(result?.tool_call_id, 'call_a');
    assert.match(String(result?.content), /ada@example\.com/);
    assert.doesNotMatch(
      JSON.stringify(fake.requests.map((r) => r.body)),
      /owx-/,
      'the model never sees an execution ID',
    );
  });

  it('openai:<model> uses OPENAI_API_KEY and OPENAI_BASE_URL', async () => {
    await w.worker('openai:gpt-4.1', { env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: fake.url } });
    fake.enqueue({ text: 'hello' });
    const done = await closed(await startTurn(w.c, uniq('prov'), 'hi'));
    assert.equal(done.text, 'hello');
    assert.equal(fake.requests[0]!.headers.authorization, 'Bearer sk-test');
    assert.equal(fake.requests[0]!.body.model, 'gpt-4.1');
  });

  it('anthropic:<model> round-trips a tool call in the Messages protocol', async () => {
    await w.worker('anthropic:claude-sonnet-4-5', {
      env: { ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: fake.url },
    });
    fake.enqueue(
      { toolCalls: [{ id: 'toolu_1', name: 'lookup_contact', arguments: { name: 'Bo' } }] },
      { text: 'Bo is bo@example.com.' },
    );
    const done = await closed(await startTurn(w.c, uniq('prov'), 'what is Bo’s email?'));
    assert.equal(done.text, 'Bo is bo@example.com.', done.error);
    const [first, second] = fake.requests;
    assert.equal(first!.headers['x-api-key'], 'sk-ant-test');
    const tools = (first!.body as unknown as { tools: { name: string; input_schema: { properties: unknown } }[] })
      .tools;
    assert.deepEqual(tools.find((t) => t.name === 'lookup_contact')?.input_schema.properties, {
      name: { type: 'string', minLength: 1 },
    });
    const turns = (
      second!.body as unknown as {
        messages: { role: string; content: { type: string; tool_use_id?: string; content?: unknown }[] }[];
      }
    ).messages;
    const result = turns.flatMap((m) => m.content).find((p) => p.type === 'tool_result');
    assert.equal(result?.tool_use_id, 'toolu_1');
    assert.match(JSON.stringify(result?.content), /bo@example\.com/);
  });

  const terminal = [
    {
      name: '401 → no retry, the turn fails naming the credentials',
      reply: { status: 401, error: { message: 'Incorrect API key provided' } },
      error: /model call failed: .*refused the credentials \(HTTP 401\): Incorrect API key provided; check the API key/,
    },
    {
      name: 'context length exceeded → no retry, a clear terminal state',
      reply: {
        status: 400,
        error: { message: "This model's maximum context length is 8192 tokens.", code: 'context_length_exceeded' },
      },
      error: /model call failed: the conversation is too long for .*start a new session/,
    },
    {
      name: 'another 400 → no retry, the provider’s message',
      reply: { status: 400, error: { message: "Invalid value for 'tool_choice'" } },
      error: /model call failed: .*rejected the request \(HTTP 400\): Invalid value for 'tool_choice'/,
    },
  ];
  for (const c of terminal) {
    it(c.name, async () => {
      await compatible();
      fake.enqueue(c.reply);
      const done = await closed(await startTurn(w.c, uniq('prov'), 'hi'));
      assert.equal(done.state, 'failed');
      assert.match(String(done.error), c.error);
      assert.equal(fake.requests.length, 1, 'not retried');
    });
  }

  it('429 with Retry-After → the next attempt waits what the provider asked, then succeeds', async () => {
    await compatible();
    fake.enqueue(
      { status: 429, error: { message: 'Rate limit reached' }, headers: { 'retry-after': '3' } },
      { text: 'after the wait' },
    );
    const done = await closed(await startTurn(w.c, uniq('prov'), 'hi'));
    assert.equal(done.text, 'after the wait');
    assert.equal(fake.requests.length, 2);
    // Temporal's own first backoff is 1 s; 3 s means the provider's Retry-After was used.
    assert.ok(
      fake.requests[1]!.at - fake.requests[0]!.at >= 2_900,
      `gap ${fake.requests[1]!.at - fake.requests[0]!.at} ms`,
    );
  });

  it('500 → retried with backoff, then succeeds', async () => {
    await compatible();
    fake.enqueue({ status: 500, error: { message: 'The server had an error' } }, { text: 'recovered' });
    const done = await closed(await startTurn(w.c, uniq('prov'), 'hi'));
    assert.equal(done.text, 'recovered');
    assert.equal(fake.requests.length, 2);
  });

  it('a provider spec without its key stops the worker at start with one line', async () => {
    const res = await runCli(['worker', '--model', 'openai:gpt-4.1', '--task-queue', w.taskQueue], {
      env: { OPENAI_API_KEY: '' },
    });
    assert.notEqual(res.code, 0);
    assert.match(res.stderr.trim(), /^error: --model openai:gpt-4\.1 needs OPENAI_API_KEY in the environment$/m);
  });

  it('smoke: a real provider, when a key is present', async function () {
    const spec = process.env.OPENAI_API_KEY
      ? 'openai:gpt-4.1-mini'
      : process.env.ANTHROPIC_API_KEY
        ? 'anthropic:claude-3-5-haiku-latest'
        : undefined;
    if (!spec) {
      console.log('      (skipped: set OPENAI_API_KEY or ANTHROPIC_API_KEY to talk to a real provider)');
      return this.skip();
    }
    await w.worker(spec, { env: { OPENAI_BASE_URL: '' } });
    const done = await closed(await startTurn(w.c, uniq('prov'), 'Reply with the single word: pong'));
    assert.equal(done.state, 'completed', done.error);
    assert.match(String(done.text), /pong/i);
  });
});
