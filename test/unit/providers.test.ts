import { strict as assert } from 'node:assert';
import { APICallError } from 'ai';
import { classifyProviderError, retryAfterMs, toModelMessages } from '../../activities/models/providers';
import { defaultModelSpec, parseProviderSpec } from '../../activities/models/specs';
import { loadModel } from '../../activities/models';

describe('providers: parseProviderSpec', () => {
  const ok = [
    { spec: 'openai:gpt-4.1', want: { provider: 'openai', model: 'gpt-4.1' } },
    { spec: 'anthropic:claude-sonnet-4-5', want: { provider: 'anthropic', model: 'claude-sonnet-4-5' } },
    {
      spec: 'openai-compatible:llama3.1@http://localhost:11434/v1/',
      want: { provider: 'openai-compatible', model: 'llama3.1', baseURL: 'http://localhost:11434/v1' },
    },
    {
      spec: 'openai-compatible:org/model:free@https://openrouter.ai/api/v1',
      want: { provider: 'openai-compatible', model: 'org/model:free', baseURL: 'https://openrouter.ai/api/v1' },
    },
  ];
  for (const c of ok)
    it(`${c.spec} → ${JSON.stringify(c.want)}`, () => assert.deepEqual(parseProviderSpec(c.spec), c.want));
  it('demo / scripted are not provider specs', () => {
    assert.equal(parseProviderSpec('demo'), undefined);
    assert.equal(parseProviderSpec('scripted:x.json'), undefined);
  });
  const bad = [
    { spec: 'openai:', why: /`model` openai:: name a model, e.g. openai:gpt-4\.1/ },
    { spec: 'anthropic: ', why: /name a model, e.g. anthropic:claude-sonnet-4-5/ },
    { spec: 'openai-compatible:llama3', why: /expected openai-compatible:<model>@<baseURL>/ },
    {
      spec: 'openai-compatible:llama3@localhost:11434',
      why: /the base URL must be an http\(s\) URL, got 'localhost:11434'/,
    },
    { spec: 'openai-compatible:@http://x/v1', why: /name a model/ },
  ];
  for (const c of bad) it(`${c.spec} → one line`, () => assert.throws(() => parseProviderSpec(c.spec), c.why));
  it('loadModel names the missing key', () =>
    assert.throws(() => loadModel('anthropic:claude-sonnet-4-5', {}), /needs ANTHROPIC_API_KEY in the environment/));
  it('loadModel builds a provider model without calling it', () =>
    assert.equal(
      loadModel('openai-compatible:m@http://127.0.0.1:1/v1', {}).name,
      'openai-compatible:m@http://127.0.0.1:1/v1',
    ));
});

describe('providers: defaultModelSpec', () => {
  const cases = [
    { env: {}, want: 'demo' },
    { env: { OPENAI_API_KEY: 'k' }, want: 'openai:gpt-4.1' },
    { env: { ANTHROPIC_API_KEY: 'k' }, want: 'anthropic:claude-sonnet-4-5' },
    { env: { OPENAI_API_KEY: 'k', OPENWORKER_MODEL: 'demo' }, want: 'demo' },
    { env: { OPENWORKER_MODEL: ' openai-compatible:m@http://h/v1 ' }, want: 'openai-compatible:m@http://h/v1' },
  ];
  for (const c of cases)
    it(`${JSON.stringify(c.env)} → ${c.want}`, () => assert.equal(defaultModelSpec(c.env), c.want));
});

describe('providers: retryAfterMs', () => {
  const now = Date.parse('2026-12-02T12:00:00Z');
  const cases: { headers?: Record<string, string>; want: number | undefined }[] = [
    { headers: undefined, want: undefined },
    { headers: {}, want: undefined },
    { headers: { 'retry-after': '3' }, want: 3000 },
    { headers: { 'Retry-After': '1.5' }, want: 1500 },
    { headers: { 'retry-after': 'Wed, 02 Dec 2026 12:00:10 GMT' }, want: 10_000 },
    { headers: { 'retry-after': 'Wed, 02 Dec 2026 11:00:00 GMT' }, want: 0 },
    { headers: { 'retry-after-ms': '250', 'retry-after': '9' }, want: 250 },
    { headers: { 'retry-after': 'soon' }, want: undefined },
    // The provider's Date is the reference: this worker's clock (now) is 5 minutes behind it.
    {
      headers: { 'retry-after': 'Wed, 02 Dec 2026 12:05:10 GMT', date: 'Wed, 02 Dec 2026 12:05:00 GMT' },
      want: 10_000,
    },
    { headers: { 'retry-after': 'Wed, 02 Dec 2026 12:00:10 GMT', Date: 'garbage' }, want: 10_000 },
  ];
  for (const c of cases)
    it(`${JSON.stringify(c.headers)} → ${c.want}`, () => assert.equal(retryAfterMs(c.headers, now), c.want));
});

describe('providers: classifyProviderError', () => {
  const api = (statusCode: number | undefined, body: unknown, headers?: Record<string, string>) =>
    new APICallError({
      message: 'provider said no',
      url: 'http://x',
      requestBodyValues: {},
      statusCode,
      responseBody: JSON.stringify(body),
      ...(headers ? { responseHeaders: headers } : {}),
    });
  const cases = [
    {
      name: '401',
      err: api(401, { error: { message: 'bad key' } }),
      retryable: false,
      kind: 'auth',
      message: /refused the credentials \(HTTP 401\): bad key; check the API key/,
    },
    {
      name: '403',
      err: api(403, { error: { message: 'no access' } }),
      retryable: false,
      kind: 'auth',
      message: /HTTP 403/,
    },
    {
      name: '400 context (OpenAI)',
      err: api(400, { error: { code: 'context_length_exceeded', message: 'maximum context length is 8192' } }),
      retryable: false,
      kind: 'context_length',
      message: /too long for m/,
    },
    {
      name: '400 context (Anthropic)',
      err: api(400, {
        error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' },
      }),
      retryable: false,
      kind: 'context_length',
      message: /too long/,
    },
    {
      name: '200 with a body the SDK cannot read',
      err: api(200, { choices: [{ message: { tool_calls: [{ function: { name: {} } }] } }] }),
      retryable: false,
      kind: 'malformed',
      message: /answered with a response that does not follow its API/,
    },
    {
      name: '400 other',
      err: api(400, { error: { message: 'bad tool schema' } }),
      retryable: false,
      kind: 'rejected',
      message: /rejected the request \(HTTP 400\): bad tool schema/,
    },
    {
      name: '404 model',
      err: api(404, { error: { message: 'model not found' } }),
      retryable: false,
      kind: 'rejected',
      message: /HTTP 404/,
    },
    {
      name: '429 with Retry-After',
      err: api(429, { error: { message: 'slow down' } }, { 'retry-after': '7' }),
      retryable: true,
      kind: 'unavailable',
      message: /unavailable \(HTTP 429\)/,
      after: 7000,
    },
    { name: '500', err: api(500, 'oops'), retryable: true, kind: 'unavailable', message: /HTTP 500/ },
    {
      name: '529 overloaded',
      err: api(529, { error: { message: 'Overloaded' } }),
      retryable: true,
      kind: 'unavailable',
      message: /Overloaded/,
    },
    { name: 'no status', err: api(undefined, ''), retryable: true, kind: 'unavailable', message: /no answer/ },
    {
      name: 'fetch failed',
      err: new TypeError('fetch failed'),
      retryable: true,
      kind: 'unavailable',
      message: /could not be reached: fetch failed/,
    },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.retryable ? 'retry' : 'stop'} (${c.kind})`, () => {
      const e = classifyProviderError(c.err, 'm');
      assert.equal(e.retryable, c.retryable);
      assert.equal(e.kind, c.kind);
      assert.match(e.message, c.message);
      assert.equal(e.retryAfterMs, c.after);
      assert.ok(!e.message.includes('\n'), 'one line');
    });
  }
});

describe('providers: toModelMessages', () => {
  it('maps user, assistant with tool calls, and tool results (errors as error-text)', () => {
    assert.deepEqual(
      toModelMessages([
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'lookup', arguments: { q: 1 } }] },
        { role: 'tool', toolCallId: 'c1', name: 'lookup', content: '{"a":1}' },
        { role: 'tool', toolCallId: 'c2', name: 'send', content: 'Error: rejected', isError: true },
        { role: 'assistant', content: 'done' },
      ]),
      [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'lookup', input: { q: 1 } }] },
        {
          role: 'tool',
          content: [
            { type: 'tool-result', toolCallId: 'c1', toolName: 'lookup', output: { type: 'text', value: '{"a":1}' } },
          ],
        },
        {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: 'c2',
              toolName: 'send',
              output: { type: 'error-text', value: 'Error: rejected' },
            },
          ],
        },
        { role: 'assistant', content: [{ type: 'text', text: 'done' }] },
      ],
    );
  });
});
