import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../workflows/definitions';
import type { Message, ToolCall } from '../workflows/types';

/** What a model sees of a tool: never the execution ID or any runtime policy. */
export interface ToolDescriptor {
  name: string;
  description: string;
  /** JSON schema derived from the tool's zod input schema. */
  inputSchema: Record<string, unknown>;
}

export interface ModelRequest {
  sessionId: string;
  turn: number;
  iteration: number;
  messages: Message[];
  tools: ToolDescriptor[];
}

export interface ModelResponse {
  text: string;
  toolCalls: ToolCall[];
}

/** A language model, as the worker uses it. Real providers arrive through the same interface. */
export interface ModelProvider {
  readonly name: string;
  generate(request: ModelRequest, options: { signal: AbortSignal }): Promise<ModelResponse>;
  /** The model's context window in tokens: the compaction budget unless OPENWORKER_CONTEXT_TOKENS sets one. */
  readonly contextWindow?: number;
  /** Tokens of these messages by the provider's own tokenizer; without it, an estimate (docs/concepts.md). */
  countTokens?(messages: readonly Message[]): number;
}

export type ModelErrorKind = 'auth' | 'rejected' | 'context_length' | 'unavailable' | 'script' | 'malformed';

/**
 * Runs one model call as an activity: heartbeats well inside the turn's 10 s heartbeat timeout (a
 * model call on a lost worker is retried within seconds), and turns a ModelError into the failure
 * the turn's retry policy reads.
 */
export async function modelCall<T>(call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const beat = setInterval(() => ctx.heartbeat(), 2_000);
  try {
    return await call(ctx.cancellationSignal);
  } catch (err) {
    if (!(err instanceof ModelError)) throw err;
    if (!err.retryable) throw ApplicationFailure.nonRetryable(err.message, FAILURE.modelError, { kind: err.kind });
    // Temporal's backoff, unless the provider said how long to wait.
    throw ApplicationFailure.create({
      message: err.message,
      type: FAILURE.modelUnavailable,
      ...(err.retryAfterMs !== undefined ? { nextRetryDelay: err.retryAfterMs } : {}),
    });
  } finally {
    clearInterval(beat);
  }
}

/**
 * A model failure. `retryable: false` ends the turn with this message instead of retrying;
 * `retryAfterMs` is the provider's own Retry-After, which the next attempt waits for.
 */
export class ModelError extends Error {
  constructor(
    message: string,
    readonly retryable = false,
    readonly kind?: ModelErrorKind,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'ModelError';
  }
}
