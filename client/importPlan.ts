import { reservedName } from '../workflows/deciders';
import type { ImportDisposition, ImportedCall, Message, ToolCall } from '../workflows/types';

/**
 * Reading a session from another agent runtime: a JSONL file of OpenAI-shaped chat messages (the
 * shape OpenWorker stores), one per line. Pure: it decides what becomes transcript and what happens
 * to tool calls that have no result — the place where duplicates are born.
 *
 * A tool call may carry `"openworker": { "approval": "approved" | "pending" | "rejected",
 * "dispatched": false }`, what the old runtime knew. The conservative rule of OpenWorker #443
 * applies to a trailing call without a result: unless the file proves it never ran (`dispatched:
 * false`, or an approval still `pending`), it may have run, so it becomes `recovery_required` and is
 * never executed on import.
 */

export const IMPORT_PROTOCOL = 'openai-jsonl-v1';

/**
 * recovery_required: it may have run, a human decides (retry / succeeded / failed);
 * awaiting_approval: it provably never ran and was never approved;
 * run: approved and provably never dispatched; rejected: the model is told so.
 */
export type Disposition = ImportDisposition;
export type PendingCall = ImportedCall;

export interface ImportPlan {
  protocol: typeof IMPORT_PROTOCOL;
  /** Every message up to the trailing calls, each tool call paired with one result. */
  transcript: Message[];
  /** The last assistant message's calls that have no result, if any. */
  pending: PendingCall[];
  /** What was dropped or patched, one line each (shown to the user). */
  notes: string[];
}

interface RawCall {
  id?: unknown;
  type?: unknown;
  function?: { name?: unknown; arguments?: unknown };
  openworker?: { approval?: unknown; dispatched?: unknown; by?: unknown };
}
interface RawMessage {
  role?: unknown;
  content?: unknown;
  tool_calls?: unknown;
  tool_call_id?: unknown;
  name?: unknown;
}

export class ImportError extends Error {}

function text(content: unknown, where: string): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p: { type?: unknown; text?: unknown }) =>
        p && p.type === 'text' && typeof p.text === 'string' ? p.text : '',
      )
      .join('');
  }
  throw new ImportError(`${where}: content must be a string or an array of text parts`);
}

function parseCall(raw: RawCall, where: string): { call: ToolCall; meta: RawCall['openworker'] } {
  const id = typeof raw.id === 'string' && raw.id ? raw.id : undefined;
  const name = raw.function?.name;
  if (!id) throw new ImportError(`${where}: a tool call has no id`);
  if (typeof name !== 'string' || !name) throw new ImportError(`${where}: tool call ${id} has no function name`);
  let args: unknown = raw.function?.arguments ?? {};
  if (typeof args === 'string') {
    try {
      args = args.trim() ? JSON.parse(args) : {};
    } catch {
      throw new ImportError(`${where}: tool call ${id} has arguments that are not JSON`);
    }
  }
  return { call: { id, name, arguments: args }, meta: raw.openworker };
}

/** Parses the file's text into a plan; throws ImportError (one line, naming the line) on bad input. */
export function planImport(jsonl: string): ImportPlan {
  const notes: string[] = [];
  const messages: (Message & { line: number })[] = [];
  const metaOf = new Map<string, RawCall['openworker']>();
  const lines = jsonl.split(/\r?\n/);
  lines.forEach((line, i) => {
    const where = `line ${i + 1}`;
    if (!line.trim()) return;
    let m: RawMessage;
    try {
      m = JSON.parse(line) as RawMessage;
    } catch {
      throw new ImportError(`${where}: not JSON; expected one chat message per line`);
    }
    if (!m || typeof m !== 'object' || Array.isArray(m))
      throw new ImportError(`${where}: expected a chat message object`);
    switch (m.role) {
      case 'system':
      case 'developer':
        notes.push(`${where}: ${m.role} message left out (the worker's own instructions apply)`);
        return;
      case 'user':
        messages.push({ role: 'user', content: text(m.content, where), line: i + 1 });
        return;
      case 'assistant': {
        if (m.tool_calls !== undefined && !Array.isArray(m.tool_calls))
          throw new ImportError(`${where}: tool_calls must be an array`);
        const calls = ((m.tool_calls as RawCall[] | undefined) ?? []).map((c) => parseCall(c, where));
        for (const { call, meta } of calls) {
          if (metaOf.has(call.id)) throw new ImportError(`${where}: tool call id ${call.id} is used twice`);
          metaOf.set(call.id, meta);
        }
        messages.push({
          role: 'assistant',
          content: text(m.content, where),
          ...(calls.length ? { toolCalls: calls.map((c) => c.call) } : {}),
          line: i + 1,
        });
        return;
      }
      case 'tool': {
        const id = m.tool_call_id;
        if (typeof id !== 'string' || !metaOf.has(id))
          throw new ImportError(
            `${where}: a tool result for ${typeof id === 'string' ? `unknown call ${id}` : 'no tool_call_id'}`,
          );
        const call = messages
          .flatMap((x) => (x.role === 'assistant' ? (x.toolCalls ?? []) : []))
          .find((c) => c.id === id)!;
        if (messages.some((x) => x.role === 'tool' && x.toolCallId === id))
          throw new ImportError(`${where}: a second result for tool call ${id}`);
        // Providers need the results right after their assistant message, before anything else.
        const owner = [...messages].reverse().find((x) => x.role !== 'tool');
        if (owner?.role !== 'assistant' || !owner.toolCalls?.some((c) => c.id === id)) {
          throw new ImportError(
            `${where}: the result for tool call ${id} comes after other messages; results must directly follow their assistant message`,
          );
        }
        messages.push({
          role: 'tool',
          toolCallId: id,
          name: typeof m.name === 'string' && m.name ? m.name : call.name,
          content: text(m.content, where),
          line: i + 1,
        });
        return;
      }
      default:
        throw new ImportError(
          `${where}: unknown role ${JSON.stringify(m.role)}; expected system, user, assistant or tool`,
        );
    }
  });

  const answered = new Set(messages.flatMap((m) => (m.role === 'tool' ? [m.toolCallId] : [])));
  const lastAssistant = messages
    .map((m, i) => (m.role === 'assistant' && m.toolCalls?.length ? i : -1))
    .filter((i) => i >= 0)
    .pop();
  const trailing =
    lastAssistant !== undefined && !messages.slice(lastAssistant + 1).some((m) => m.role !== 'tool')
      ? lastAssistant
      : undefined;

  // Calls left without a result earlier in the file: the conversation moved on, so they can only be
  // reported, never resumed; the model learns the outcome is unknown (the result follows its call).
  const transcript: Message[] = [];
  for (const [i, m] of messages.entries()) {
    const { line: _line, ...msg } = m;
    transcript.push(msg);
    if (m.role !== 'assistant' || !m.toolCalls || i === trailing) continue;
    for (const c of m.toolCalls.filter((c) => !answered.has(c.id))) {
      notes.push(
        `line ${m.line}: tool call ${c.id} (${c.name}) has no result and the conversation moved on; recorded as "outcome unknown"`,
      );
      transcript.push({
        role: 'tool',
        toolCallId: c.id,
        name: c.name,
        content: 'Error: outcome unknown: imported without a result; check before doing it again',
        isError: true,
      });
    }
  }
  const pending: PendingCall[] = [];
  if (trailing !== undefined) {
    const calls = (messages[trailing] as Extract<Message, { role: 'assistant' }>).toolCalls!.filter(
      (c) => !answered.has(c.id),
    );
    for (const call of calls) pending.push({ call, ...dispositionOf(metaOf.get(call.id)) });
  }
  return { protocol: IMPORT_PROTOCOL, transcript, pending, notes };
}

function dispositionOf(meta: RawCall['openworker']): Omit<PendingCall, 'call'> {
  const approval = meta?.approval;
  // A name this system reserves (another runtime's 'auto', say) is no person: the previous runtime decided.
  const by = typeof meta?.by === 'string' && meta.by && !reservedName(meta.by) ? meta.by : undefined;
  // What the old runtime recorded as dispatched may have run, whatever its approval says now.
  if (meta?.dispatched === true) {
    return {
      disposition: 'recovery_required',
      why: 'marked dispatched, with no result: it may have run',
      ...(by && approval === 'approved' ? { by } : {}),
    };
  }
  if (approval === 'rejected')
    return {
      disposition: 'rejected',
      why: `rejected before the import${by ? ` by ${by}` : ''}`,
      ...(by ? { by } : {}),
    };
  if (meta?.dispatched === false) {
    return approval === 'approved'
      ? { disposition: 'run', why: 'approved and marked never dispatched', ...(by ? { by } : {}) }
      : { disposition: 'awaiting_approval', why: 'marked never dispatched, not approved' };
  }
  if (approval === 'pending')
    return { disposition: 'awaiting_approval', why: 'its approval was still pending: it cannot have run' };
  return {
    disposition: 'recovery_required',
    why:
      approval === 'approved'
        ? 'approved before the import, with no result: it may have run'
        : 'no result and nothing proves it never ran',
    ...(by && approval === 'approved' ? { by } : {}),
  };
}
