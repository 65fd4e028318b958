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
}

export type ModelErrorKind = 'auth' | 'rejected' | 'context_length' | 'unavailable' | 'script' | 'malformed';

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
