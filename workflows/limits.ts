// Size limits shared by the session workflow, the turn workflow and the client. Pure and
// sandbox-safe (no Buffer, no TextEncoder): workflow code counts the same bytes as the client.

/**
 * A user message larger than this is refused: by the client before sending, by the session when a
 * raw signal brings one, by a turn started with one. Fixed, not configurable: workflow code cannot
 * read the environment, and a limit that differed between workers would make replay depend on
 * which worker recorded a history.
 */
export const MAX_MESSAGE_BYTES = 32 * 1024;

/** Bytes of `s` in UTF-8 (a lone surrogate counts 3, as the replacement character it becomes). */
export function utf8Bytes(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** The longest prefix of `s` that fits in `maxBytes` of UTF-8, never splitting a surrogate pair. */
export function cutUtf8(s: string, maxBytes: number): string {
  let n = 0;
  let i = 0;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00;
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3;
    if (n + size > maxBytes) break;
    n += size;
    i += pair ? 2 : 1;
  }
  return s.slice(0, i);
}

/** Why a user message cannot become a turn, as one line; undefined when it can. */
export function messageProblem(text: unknown, maxBytes = MAX_MESSAGE_BYTES): string | undefined {
  if (typeof text !== 'string') return `the message must be text, got ${text === null ? 'null' : typeof text}`;
  if (!text.trim()) return 'the message is empty; say what the agent should do';
  const bytes = utf8Bytes(text);
  if (bytes > maxBytes)
    return `the message is ${bytes} bytes; the limit is ${maxBytes} bytes: shorten it, or attach large content through a tool`;
  return undefined;
}

/** Why a turn's starting message is too large, or undefined. */
export function oversizedMessage(text: string): string | undefined {
  return typeof text === 'string' && utf8Bytes(text) > MAX_MESSAGE_BYTES ? messageProblem(text) : undefined;
}
