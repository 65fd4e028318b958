import type { Message, ToolCall } from '../../workflows/types';
import type { ModelProvider } from '../model';

const EMAIL =
  /\b(?:e-?mail|send (?:an )?e-?mail to|write to)\s+([^\s,;]+@[^\s,;]+)(?:\s+(?:regarding|about|saying|re)\s*:?\s*(.+))?/i;

/**
 * A tiny deterministic planner for the demo: "email bob@example.com about the launch" becomes a
 * send_email call, and a tool result becomes a one-line summary.
 */
export function demoModel(wordMs = DEMO_WORD_MS): ModelProvider {
  return {
    name: 'demo',
    async generate(request, { onText, signal }) {
      const response = answer(request.messages);
      // Streams its answer a word at a time, like a real model (docs/chat-and-webui.md).
      if (onText)
        for (const word of response.text.match(/\s*\S+\s*/g) ?? []) {
          if (signal.aborted) break;
          onText(word);
          if (wordMs) await new Promise((r) => setTimeout(r, wordMs));
        }
      return response;
    },
  };
}

/** The demo model's pause between streamed words. */
export const DEMO_WORD_MS = 10;

function answer(messages: Message[]): { text: string; toolCalls: ToolCall[] } {
  const last = messages[messages.length - 1];
  if (last?.role === 'tool') return { text: summarize(messages), toolCalls: [] };
  const user = [...messages].reverse().find((m): m is Extract<Message, { role: 'user' }> => m.role === 'user');
  const match = user && EMAIL.exec(user.content);
  if (!match) {
    return {
      text: 'I am the demo model. I can send email: try "email bob@example.com about the launch".',
      toolCalls: [],
    };
  }
  const to = match[1]!.replace(/[.)]+$/, '');
  const about = (match[2] ?? 'hello').trim().replace(/[.!]+$/, '');
  const n = messages.filter((m) => m.role === 'assistant').length + 1;
  return {
    text: `I'll email ${to} about ${about}.`,
    toolCalls: [
      {
        id: `call_${n}`,
        name: 'send_email',
        arguments: {
          to,
          subject: about.charAt(0).toUpperCase() + about.slice(1),
          body: `Hi,\n\nA quick note about ${about}.\n\n— sent by openworker-temporal`,
        },
      },
    ],
  };
}

function summarize(messages: Message[]): string {
  const results: Extract<Message, { role: 'tool' }>[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i]!.role === 'tool'; i--)
    results.unshift(messages[i] as Extract<Message, { role: 'tool' }>);
  return results
    .map((r) =>
      r.isError ? `${r.name} did not run: ${r.content.replace(/^Error: /, '')}` : `Done: ${r.name} succeeded.`,
    )
    .join(' ');
}
