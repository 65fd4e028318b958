import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { streamReply } from './fakeModelStream';

/**
 * A local server that speaks OpenAI's Chat Completions wire protocol (`POST /v1/chat/completions`)
 * and Anthropic's Messages protocol (`POST /v1/messages`), so the real AI SDK client code runs
 * against it. Replies are queued by the test and consumed one per request, whichever protocol asks;
 * with the queue empty it answers "ok". Every request is kept for inspection. A request with
 * `stream: true` is answered with Server-Sent Events (fakeModelStream.ts).
 */

export type FakeReply =
  /**
   * `argumentsText` goes on the wire as is (malformed JSON, say); else `arguments` is JSON-encoded.
   * With `hold`, the answer waits until it settles (a model response kept pending as long as a test needs).
   */
  | {
      text?: string;
      toolCalls?: { id?: string; name: string; arguments?: unknown; argumentsText?: string }[];
      hold?: Promise<unknown>;
      /** Streamed (`stream: true`): after the first word, wait for this. */
      gate?: Promise<unknown>;
      /** Streamed: the pause between words. */
      chunkDelayMs?: number;
    }
  | { status: number; error: { message: string; type?: string; code?: string }; headers?: Record<string, string> }
  /** Never answers: the request stays open until the client gives up (a slow or stuck model). */
  | { hang: true };

export interface FakeRequest {
  at: number;
  body: {
    model: string;
    messages: {
      role: string;
      content?: unknown;
      tool_calls?: { id: string; function: { name: string; arguments: string } }[];
      tool_call_id?: string;
    }[];
    tools?: { type: string; function: { name: string; description?: string; parameters: Record<string, unknown> } }[];
    stream?: boolean;
  };
  headers: http.IncomingHttpHeaders;
  /** A streamed answer: when its first text went out (ms since the epoch). */
  firstTextAt?: number;
  /** A streamed answer: when each word went out. */
  textAt?: number[];
}

export interface FakeModelServer {
  /** The base URL (ends in /v1). */
  url: string;
  requests: FakeRequest[];
  /** Requests whose client closed the connection before an answer (an aborted model call). */
  aborted(): number;
  enqueue(...replies: FakeReply[]): void;
  close(): Promise<void>;
}

export async function startFakeModelServer(): Promise<FakeModelServer> {
  const queue: FakeReply[] = [];
  const requests: FakeRequest[] = [];
  let seq = 0;
  let aborted = 0;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8').on('data', (d: string) => (raw += d));
    req.on('end', () => {
      const send = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
      };
      const anthropic = req.url === '/v1/messages';
      if (req.method !== 'POST' || (req.url !== '/v1/chat/completions' && !anthropic))
        return send(404, { error: { message: `no route ${req.method} ${req.url}` } });
      let body: FakeRequest['body'];
      try {
        body = JSON.parse(raw) as FakeRequest['body'];
      } catch {
        return send(400, { error: { message: 'body is not JSON', type: 'invalid_request_error' } });
      }
      const request: FakeRequest = { at: Date.now(), body, headers: req.headers };
      requests.push(request);
      const reply = queue.shift() ?? { text: 'ok' };
      if ('hang' in reply) {
        res.on('close', () => aborted++);
        return;
      }
      if ('status' in reply) {
        const error = { type: 'invalid_request_error', ...reply.error };
        return send(reply.status, anthropic ? { type: 'error', error } : { error }, reply.headers);
      }
      const answer = (): void => {
        if (body.stream) {
          const calls = (reply.toolCalls ?? []).map((c, i) => ({
            id: c.id ?? (anthropic ? `toolu_${++seq}` : `call_${++seq}_${i}`),
            name: c.name,
            arguments: c.argumentsText ?? JSON.stringify(c.arguments ?? {}),
          }));
          const id = anthropic ? `msg_${++seq}` : `chatcmpl-${++seq}`;
          const sent = (): void => {
            request.firstTextAt ??= Date.now();
            (request.textAt ??= []).push(Date.now());
          };
          return void streamReply(res, anthropic ? 'anthropic' : 'openai', body.model, { ...reply, calls }, id, sent);
        }
        if (anthropic)
          return send(
            200,
            anthropicMessage(body.model, reply, () => ++seq),
          );
        const calls = (reply.toolCalls ?? []).map((c, i) => ({
          id: c.id ?? `call_${++seq}_${i}`,
          type: 'function',
          function: { name: c.name, arguments: c.argumentsText ?? JSON.stringify(c.arguments) },
        }));
        send(200, {
          id: `chatcmpl-${++seq}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body.model,
          choices: [
            {
              index: 0,
              message: {
                role: 'assistant',
                content: reply.text ?? null,
                ...(calls.length ? { tool_calls: calls } : {}),
              },
              finish_reason: calls.length ? 'tool_calls' : 'stop',
            },
          ],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        });
      };
      if (reply.hold) return void reply.hold.then(answer, answer);
      answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    aborted: () => aborted,
    enqueue: (...replies) => void queue.push(...replies),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function anthropicMessage(
  model: string,
  reply: Exclude<FakeReply, { status: number } | { hang: true }>,
  next: () => number,
): unknown {
  const uses = (reply.toolCalls ?? []).map((c) => ({
    type: 'tool_use',
    id: c.id ?? `toolu_${next()}`,
    name: c.name,
    input: c.arguments,
  }));
  return {
    id: `msg_${next()}`,
    type: 'message',
    role: 'assistant',
    model,
    content: [...(reply.text ? [{ type: 'text', text: reply.text }] : []), ...uses],
    stop_reason: uses.length ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 5 },
  };
}

/**
 * A fake model server for each test (`per: 'test'`) or for the whole file, started and closed by
 * mocha hooks. The returned object stands for the current server; `spec()` is the worker's --model.
 */
export function useFakeModelServer(per: 'test' | 'file' = 'test'): FakeModelServer & { spec(): string } {
  let current: FakeModelServer | undefined;
  const [up, down] = per === 'test' ? [beforeEach, afterEach] : [before, after];
  up(async () => {
    current = await startFakeModelServer();
  });
  down(async () => current?.close());
  const spec = () => `openai-compatible:fake-model@${current!.url}`;
  return new Proxy({ spec } as FakeModelServer & { spec(): string }, {
    get: (target, key) => (key === 'spec' ? target.spec : Reflect.get(current!, key)),
  });
}
