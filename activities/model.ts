import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { FAILURE } from '../workflows/definitions';
import { snapshotOf } from '../runtime/textStream';
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

export interface GenerateOptions {
  signal: AbortSignal;
  /**
   * Called with each piece of text as the model produces it (streaming, docs/chat-and-webui.md).
   * A provider without streaming never calls it; the response's `text` stays the whole answer.
   */
  onText?(delta: string): void;
}

/** A language model, as the worker uses it. Real providers arrive through the same interface. */
export interface ModelProvider {
  readonly name: string;
  generate(request: ModelRequest, options: GenerateOptions): Promise<ModelResponse>;
  /** The model's context window in tokens: the compaction budget unless OPENWORKER_CONTEXT_TOKENS sets one. */
  readonly contextWindow?: number;
  /** Tokens of these messages by the provider's own tokenizer; without it, an estimate (docs/concepts.md). */
  countTokens?(messages: readonly Message[]): number;
}

export type ModelErrorKind = 'auth' | 'rejected' | 'context_length' | 'unavailable' | 'script' | 'malformed';

/** A streamed model call's text leaves the activity at most this often (then the worker's heartbeat throttle). */
export const STREAM_BEAT_MS = 100;

/**
 * Runs one model call as an activity: heartbeats well inside the turn's 10 s heartbeat timeout (a
 * model call on a lost worker is retried within seconds), and turns a ModelError into the failure
 * the turn's retry policy reads. With `streamIteration`, the text the model streams rides on the
 * heartbeat as `{ stream: StreamSnapshot }` for readers of the live turn (nothing in history).
 */
export async function modelCall<T>(
  call: (signal: AbortSignal, onText: (delta: string) => void, textDone: () => void) => Promise<T>,
  streamIteration?: number,
): Promise<T> {
  const ctx = Context.current();
  let text = '';
  let seq = 0;
  let last = 0;
  let pending: NodeJS.Timeout | undefined;
  let done = false;
  const details = () =>
    streamIteration === undefined || !seq
      ? []
      : [{ stream: snapshotOf(streamIteration, text, seq, done, undefined, ctx.info.attempt) }];
  const publish = () => {
    clearTimeout(pending);
    pending = undefined;
    last = Date.now();
    ctx.heartbeat(...details());
  };
  const onText = (delta: string) => {
    if (streamIteration === undefined || !delta) return;
    text += delta;
    seq++;
    if (pending) return;
    const wait = last + STREAM_BEAT_MS - Date.now();
    if (wait <= 0) publish();
    else pending = setTimeout(publish, wait);
  };
  // The model has answered: the whole text at once (the call may still be storing it).
  const textDone = () => {
    if (!seq || done) return;
    done = true;
    seq++;
    publish();
  };
  // Liveness: the latest snapshot again (a heartbeat without details would clear it).
  const beat = setInterval(publish, 2_000);
  try {
    return await call(ctx.cancellationSignal, onText, textDone);
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
    clearTimeout(pending);
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
