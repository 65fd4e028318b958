import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import {
  APICallError,
  InvalidResponseDataError,
  JSONParseError,
  TypeValidationError,
  generateText,
  jsonSchema,
  streamText,
  tool,
} from 'ai';
import type { LanguageModel, ModelMessage, ToolSet } from 'ai';
import type { Message } from '../../workflows/types';
import type { ModelProvider, ToolDescriptor } from '../model';
import { ModelError } from '../model';
import type { ProviderSpec } from './specs';
import type { Env } from '../../runtime/config';

/**
 * Real models through the Vercel AI SDK (specs in specs.ts). The SDK does not retry (Temporal does,
 * with backoff); its errors are sorted into "retry" and "stop with a message". Loaded only by a
 * worker that uses a provider, so the CLI stays quick.
 */

function languageModel(spec: ProviderSpec, env: NodeJS.ProcessEnv): LanguageModel {
  const need = (key: string): string => {
    const v = env[key]?.trim();
    if (!v) throw new Error(`\`model\` ${spec.provider}:${spec.model} needs ${key} in the environment`);
    return v;
  };
  switch (spec.provider) {
    case 'openai':
      // Chat Completions: the protocol OPENAI_BASE_URL proxies and gateways speak too.
      return createOpenAI({
        apiKey: need('OPENAI_API_KEY'),
        ...(env.OPENAI_BASE_URL ? { baseURL: env.OPENAI_BASE_URL } : {}),
      }).chat(spec.model);
    case 'anthropic':
      return createAnthropic({
        apiKey: need('ANTHROPIC_API_KEY'),
        ...(env.ANTHROPIC_BASE_URL ? { baseURL: env.ANTHROPIC_BASE_URL } : {}),
      })(spec.model);
    case 'openai-compatible':
      return createOpenAICompatible({
        name: 'openai-compatible',
        baseURL: spec.baseURL!,
        ...(env.OPENAI_COMPATIBLE_API_KEY ? { apiKey: env.OPENAI_COMPATIBLE_API_KEY } : {}),
      }).chatModel(spec.model);
  }
}

/** Our transcript in the AI SDK's message shape. Tool results stay text: providers take text best. */
export function toModelMessages(messages: readonly Message[]): ModelMessage[] {
  return messages.map((m): ModelMessage => {
    switch (m.role) {
      case 'user':
        return { role: 'user', content: m.content };
      case 'assistant':
        return {
          role: 'assistant',
          content: [
            ...(m.content ? [{ type: 'text' as const, text: m.content }] : []),
            ...(m.toolCalls ?? []).map((c) => ({
              type: 'tool-call' as const,
              toolCallId: c.id,
              toolName: c.name,
              input: c.arguments,
            })),
          ],
        };
      case 'tool':
        return {
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: m.toolCallId,
              toolName: m.name,
              output: { type: m.isError ? 'error-text' : 'text', value: m.content },
            },
          ],
        };
    }
  });
}

/** Declarations only: the worker validates and runs tools itself, after approval. */
function toolSet(tools: readonly ToolDescriptor[]): ToolSet {
  return Object.fromEntries(
    tools.map((t) => [t.name, tool({ description: t.description, inputSchema: jsonSchema(t.inputSchema as never) })]),
  );
}

const CONTEXT_LENGTH =
  /context[_ -]?length|context window|maximum context|prompt is too long|too many tokens|input is too long/i;

/**
 * Seconds or an HTTP date (RFC 9110), or the `retry-after-ms` some APIs send. An HTTP date is read
 * against the response's own `Date` when it has one: the provider's clock on both sides, so a worker
 * whose clock is off does not wait minutes longer (or not at all).
 */
export function retryAfterMs(headers: Record<string, string> | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
  const ms = Number(lower['retry-after-ms']);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const raw = lower['retry-after']?.trim();
  if (!raw) return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Number(raw) * 1000;
  const at = Date.parse(raw);
  const sent = Date.parse(lower['date'] ?? '');
  return Number.isNaN(at) ? undefined : Math.max(0, at - (Number.isNaN(sent) ? now : sent));
}

/** The one place that decides whether a provider failure is worth retrying. */
export function classifyProviderError(err: unknown, model: string): ModelError {
  const text = (s: string | undefined) => (s ?? '').replace(/\s+/g, ' ').trim().slice(0, 300);
  if (APICallError.isInstance(err)) {
    const status = err.statusCode;
    const detail = text(providerMessage(err.responseBody) ?? err.message);
    if (CONTEXT_LENGTH.test(`${err.responseBody ?? ''} ${err.message}`)) {
      return new ModelError(
        `the conversation is too long for ${model} (${detail}); start a new session or shorten the input`,
        false,
        'context_length',
      );
    }
    // A 2xx whose body the SDK could not read: the provider broke its own protocol (tool call names
    // or ids that are not strings, say). Asking again would get the same answer.
    if (status !== undefined && status >= 200 && status < 300) {
      return new ModelError(
        `${model} answered with a response that does not follow its API (${detail}); the turn cannot use it`,
        false,
        'malformed',
      );
    }
    if (status === 401 || status === 403)
      return new ModelError(
        `${model} refused the credentials (HTTP ${status}): ${detail}; check the API key`,
        false,
        'auth',
      );
    if (status === undefined || status === 408 || status === 409 || status === 429 || status >= 500) {
      const after = retryAfterMs(err.responseHeaders);
      return new ModelError(
        `${model} is unavailable (${status ? `HTTP ${status}` : 'no answer'}): ${detail}`,
        true,
        'unavailable',
        after,
      );
    }
    return new ModelError(`${model} rejected the request (HTTP ${status}): ${detail}`, false, 'rejected');
  }
  // A streamed chunk the SDK could not read: as above, the provider broke its protocol.
  if (TypeValidationError.isInstance(err) || JSONParseError.isInstance(err) || InvalidResponseDataError.isInstance(err))
    return new ModelError(
      `${model} answered with a response that does not follow its API (${text(err.message)}); the turn cannot use it`,
      false,
      'malformed',
    );
  // fetch failures, resets, timeouts: the provider may be back in a moment.
  return new ModelError(
    `${model} could not be reached: ${text((err as Error)?.message ?? String(err))}`,
    true,
    'unavailable',
  );
}

function providerMessage(body: string | undefined): string | undefined {
  if (!body) return undefined;
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    const m = typeof parsed.error === 'string' ? parsed.error : (parsed.error?.message ?? parsed.message);
    return typeof m === 'string' ? m : undefined;
  } catch {
    return body;
  }
}

export function providerModel(spec: ProviderSpec, env: Env): ModelProvider {
  const model = languageModel(spec, env);
  const name = `${spec.provider}:${spec.model}${spec.baseURL ? `@${spec.baseURL}` : ''}`;
  return {
    name,
    async generate({ messages, tools }, { signal, onText }) {
      const call = {
        model,
        messages: toModelMessages(messages),
        tools: toolSet(tools),
        abortSignal: signal,
        maxRetries: 0,
      };
      let result: { text: string; toolCalls: { toolCallId: string; toolName: string; input: unknown }[] };
      try {
        result = onText ? await streamed(call, onText) : await generateText(call);
      } catch (err) {
        if (signal.aborted) throw err;
        throw classifyProviderError(err, name);
      }
      return {
        text: result.text,
        toolCalls: result.toolCalls.map((c) => ({ id: c.toolCallId, name: c.toolName, arguments: c.input })),
      };
    },
  };
}

/**
 * The provider's streaming API: each text delta goes to `onText` as it arrives, and the result is
 * the same as generateText's. The SDK reports a stream's failure as a part, not a throw: the first
 * one is thrown here, so it is classified like any other.
 */
async function streamed(
  call: Parameters<typeof streamText>[0],
  onText: (delta: string) => void,
): Promise<{ text: string; toolCalls: { toolCallId: string; toolName: string; input: unknown }[] }> {
  const stream = streamText({ ...call, onError: () => undefined });
  for await (const part of stream.fullStream) {
    if (part.type === 'text-delta') onText(part.text);
    else if (part.type === 'error') throw part.error;
  }
  return { text: await stream.text, toolCalls: await stream.toolCalls };
}
