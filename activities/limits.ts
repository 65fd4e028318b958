import type { ToolCall } from '../workflows/types';
import { cutUtf8, utf8Bytes } from '../workflows/limits';

// What a model response and a tool result may cost. Large payloads are stored outside history
// (runtime/payloadStorage.ts), so these limits are about bounded memory, storage and model context,
// and about saying clearly what was cut, not only about Temporal's 2 MB blob limit.

export { DEFAULT_LIMITS, LIMIT_ENV, limitsFromEnv, type Limits } from '../runtime/limitsConfig';

/** What a truncated result shows of itself. */
export const RESULT_PREVIEW_BYTES = 4096;

/** Longer tool names cannot be registered (defineTool allows 64 characters); longer ids are cut. */
const MAX_NAME_CHARS = 64;
const MAX_CALL_ID_CHARS = 200;

/** Bytes of the JSON of `value`, or undefined when it has none (undefined, a function, a cycle, a BigInt). */
export function jsonBytes(value: unknown): number | undefined {
  try {
    const json = JSON.stringify(value);
    return json === undefined ? undefined : utf8Bytes(json);
  } catch {
    return undefined;
  }
}

/** Why a call's arguments are too large to keep, or undefined when they fit. */
export function argsProblem(name: string, bytes: number, maxBytes: number): string | undefined {
  if (bytes <= maxBytes) return undefined;
  return `arguments for '${name}' are ${bytes} bytes; the limit is ${maxBytes} bytes: pass less data per call (split it, or refer to it instead of inlining it)`;
}

/** Kept in the ledger and the transcript instead of oversized arguments, so neither grows with them. */
export function omittedArgs(bytes: number): { omitted: string } {
  return { omitted: `${bytes} bytes of arguments, over the limit` };
}

/**
 * A tool result as the turn records it. A result over the limit is NOT a failure: by the time we
 * see it, an external tool's effect has happened, so failing the call would tell the model (and the
 * ledger) "not applied" and invite a second charge or email. The call succeeds with a marked
 * preview instead. A result that is not JSON at all (a cycle, a BigInt) is handled the same way.
 */
export function capResult(result: unknown, maxBytes: number): unknown {
  const value = result === undefined ? null : result;
  let json: string | undefined;
  let why: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (err) {
    why = (err as Error)?.message ?? String(err);
  }
  if (json === undefined) {
    return {
      truncated: true,
      note: `the tool ran, but its result cannot be represented as JSON${why ? ` (${why})` : ''}; nothing of it is kept`,
    };
  }
  const bytes = utf8Bytes(json);
  if (bytes <= maxBytes) return value;
  const previewBytes = Math.min(RESULT_PREVIEW_BYTES, maxBytes);
  return {
    truncated: true,
    bytes,
    preview: cutUtf8(json, previewBytes),
    note: `the tool ran; its result was ${bytes} bytes, over the limit of ${maxBytes}: only the first ${previewBytes} bytes of its JSON are kept`,
  };
}

/** A model's text, cut with a marker when over the limit. */
export function capText(text: string, maxBytes: number): string {
  const bytes = utf8Bytes(text);
  if (bytes <= maxBytes) return text;
  return `${cutUtf8(text, maxBytes)}\n[openworker: the model's text was ${bytes} bytes; cut to the first ${maxBytes}]`;
}

/**
 * At most `max` calls of one response are planned; the next one is kept as a marker that becomes an
 * invalid call naming how many were dropped, and the rest are dropped. Dropped calls never reach the
 * ledger or the transcript, so a response with thousands of calls costs at most `max + 1` entries
 * and results in history, and the model still reads why its calls did not run.
 */
export function capToolCalls(
  calls: readonly ToolCall[],
  max: number,
): { kept: ToolCall[]; overflow?: { call: ToolCall; reason: string } } {
  if (calls.length <= max) return { kept: [...calls] };
  const dropped = calls.length - max;
  return {
    kept: calls.slice(0, max),
    overflow: {
      call: calls[max]!,
      reason: `the response has ${calls.length} tool calls; at most ${max} are taken from one response, so ${dropped === 1 ? 'this call was' : `this call and the ${dropped - 1} after it (not listed) were`} not executed: make at most ${max} calls per response`,
    },
  };
}

/** A value the model put where a string belongs, as text; never throws (`{ toString: "" }` makes String() throw). */
function describeValue(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return `(${typeof value})`;
  }
}

/** The provider's name and id for a call, bounded: neither may grow the ledger without limit. */
export function boundedCallFields(
  call: Partial<ToolCall> | undefined,
  index: number,
): { toolCallId: string; name: string } {
  const id = typeof call?.id === 'string' && call.id ? call.id : `call_missing_${index}`;
  const name = typeof call?.name === 'string' ? call.name : describeValue(call?.name);
  return {
    toolCallId: id.length > MAX_CALL_ID_CHARS ? id.slice(0, MAX_CALL_ID_CHARS) : id,
    name: name.length > MAX_NAME_CHARS ? `${name.slice(0, MAX_NAME_CHARS)}…` : name,
  };
}
