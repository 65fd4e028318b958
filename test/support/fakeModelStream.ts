import type http from 'node:http';

/**
 * The streamed (`stream: true`) answers of the fake model server: Server-Sent Events in OpenAI's
 * Chat Completions chunk format or Anthropic's Messages events. The text goes out a word at a time;
 * `gate` holds everything after the first word, `chunkDelayMs` spaces the words.
 */

export interface StreamedReply {
  text?: string;
  calls: { id: string; name: string; arguments: string }[];
  /** After the first piece of text, wait for this (a test sees partial text meanwhile). */
  gate?: Promise<unknown>;
  chunkDelayMs?: number;
}

/** The text in the pieces a model would stream: words with their trailing space. */
export const pieces = (text: string): string[] => text.match(/\s*\S+\s*/g) ?? (text ? [text] : []);

export async function streamReply(
  res: http.ServerResponse,
  protocol: 'openai' | 'anthropic',
  model: string,
  reply: StreamedReply,
  id: string,
  onText: (word: number) => void,
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (data: unknown, event?: string): void => {
    res.write(`${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`);
  };
  const words = pieces(reply.text ?? '');
  const anthropic = protocol === 'anthropic';
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: unknown, finish: string | null = null, extra = {}) =>
    send({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
      ...extra,
    });
  if (anthropic) {
    send(
      {
        type: 'message_start',
        message: {
          id,
          type: 'message',
          role: 'assistant',
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 10, output_tokens: 1 },
        },
      },
      'message_start',
    );
    if (words.length)
      send({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }, 'content_block_start');
  } else chunk({ role: 'assistant', content: '' });
  for (const [i, word] of words.entries()) {
    onText(i);
    if (anthropic)
      send({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: word } }, 'content_block_delta');
    else chunk({ content: word });
    if (i === 0 && reply.gate) await reply.gate.catch(() => undefined);
    else if (reply.chunkDelayMs) await new Promise((r) => setTimeout(r, reply.chunkDelayMs));
  }
  if (anthropic) {
    if (words.length) send({ type: 'content_block_stop', index: 0 }, 'content_block_stop');
    const first = words.length ? 1 : 0;
    for (const [i, c] of reply.calls.entries()) {
      const index = first + i;
      send(
        { type: 'content_block_start', index, content_block: { type: 'tool_use', id: c.id, name: c.name, input: {} } },
        'content_block_start',
      );
      send(
        { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: c.arguments } },
        'content_block_delta',
      );
      send({ type: 'content_block_stop', index }, 'content_block_stop');
    }
    const stop = reply.calls.length ? 'tool_use' : 'end_turn';
    send(
      { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } },
      'message_delta',
    );
    send({ type: 'message_stop' }, 'message_stop');
  } else {
    for (const [index, c] of reply.calls.entries())
      chunk({
        tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }],
      });
    chunk({}, reply.calls.length ? 'tool_calls' : 'stop', {
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    });
    res.write('data: [DONE]\n\n');
  }
  res.end();
}
