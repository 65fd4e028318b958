import type { Payload, StorageDriver } from '@temporalio/common';
import { StorageDriverClaim, defaultPayloadConverter } from '@temporalio/common';
import { contextKey } from '../workflows/context';
import { sessionWorkflowId } from '../workflows/ids';
import type { ContextRef, ContextSummary, Message } from '../workflows/types';
import { combinedCodec, defaultPayloadCodecs } from './dataConverter';
import { driverFor } from './payloadStorage';
import type { Settings } from './settings';

/**
 * Transcripts by reference (#29): a model call's input names the stored context and adds the few
 * messages since, instead of carrying the whole transcript each time. Segments go to the payload
 * store through the codecs (encrypted when keys are set), so every worker and client that shares
 * the store reads them, and each message is stored once: the bytes a session stores grow linearly.
 */
/** Whose transcript: a store that names objects by workflow (S3) files a session's segments under it. */
export interface ContextScope {
  namespace: string;
  sessionId: string;
}

export interface ContextStore {
  /** Stores `messages` after `base` (nothing new is stored when there are none). */
  append(base: ContextRef | undefined, messages: readonly Message[], scope?: ContextScope): Promise<ContextRef>;
  /** The whole transcript a reference holds, oldest first. */
  read(ref: ContextRef | undefined): Promise<Message[]>;
  /** Stores a summary of a transcript's first `covers` messages (compaction). */
  putSummary(text: string, covers: number, scope?: ContextScope): Promise<ContextSummary>;
  readSummary(summary: ContextSummary): Promise<string>;
}

interface Segment {
  prev?: ContextRef;
  messages: Message[];
}

type Stored = { driver: string; claim: Record<string, string> };

/** Resolved transcripts kept per worker: a session's next call extends the last one it read. */
const CACHED = 256;

/** The context store on a payload store driver, with `codec` applied to every segment. */
export function contextStoreOn(driver: () => StorageDriver, codec = combinedCodec([])): ContextStore {
  const cache = new Map<string, Message[]>();
  const remember = (ref: ContextRef, messages: Message[]): void => {
    const key = contextKey(ref);
    cache.delete(key);
    cache.set(key, messages);
    if (cache.size > CACHED) cache.delete(cache.keys().next().value!);
  };
  const get = async (ref: Stored): Promise<unknown> => {
    const d = driver();
    if (ref.driver !== d.name)
      throw new Error(
        `the stored context is in payload store driver '${ref.driver}', this worker uses '${d.name}': every worker and client must use the same store (OPENWORKER_PAYLOAD_STORE)`,
      );
    const [stored] = await d.retrieve({}, [new StorageDriverClaim(ref.claim)]);
    const [payload] = await codec.decode([stored as Payload]);
    return defaultPayloadConverter.fromPayload(payload!);
  };
  const put = async (value: unknown, scope: ContextScope | undefined): Promise<Stored> => {
    const [payload] = await codec.encode([defaultPayloadConverter.toPayload(value)]);
    const d = driver();
    const target = scope && {
      kind: 'workflow' as const,
      namespace: scope.namespace,
      id: sessionWorkflowId(scope.sessionId),
      type: 'session',
    };
    const [claim] = await d.store(target ? { target } : {}, [payload!]);
    return { driver: d.name, claim: claim!.claimData };
  };
  const load = async (ref: ContextRef): Promise<Segment> => {
    const segment = (await get(ref)) as Segment | undefined;
    if (!segment || !Array.isArray(segment.messages))
      throw new Error(`stored context ${contextKey(ref)} is not a segment`);
    return segment;
  };
  const read = async (ref: ContextRef | undefined): Promise<Message[]> => {
    if (!ref) return [];
    // Walk back to a transcript this worker already holds, then forward, remembering each.
    const chain: { ref: ContextRef; segment: Segment }[] = [];
    let known: Message[] = [];
    for (let at: ContextRef | undefined = ref; at;) {
      const hit = cache.get(contextKey(at));
      if (hit) {
        known = hit;
        break;
      }
      const segment = await load(at);
      chain.push({ ref: at, segment });
      at = segment.prev;
    }
    for (const { ref: at, segment } of chain.reverse()) {
      known = [...known, ...segment.messages];
      if (known.length !== at.messages)
        throw new Error(
          `stored context ${contextKey(at)} holds ${known.length} messages, its reference says ${at.messages}`,
        );
      remember(at, known);
    }
    return known;
  };
  return {
    read,
    async append(base, messages, scope) {
      if (base && !messages.length) return base;
      const before = await read(base);
      // A segment names the chain before it, not its summary or flags: those ride on the reference.
      const prev = base && { driver: base.driver, claim: base.claim, messages: base.messages };
      const segment: Segment = { ...(prev ? { prev } : {}), messages: [...messages] };
      const ref: ContextRef = { ...(await put(segment, scope)), messages: before.length + messages.length };
      remember(ref, [...before, ...messages]);
      return ref;
    },
    async putSummary(text, covers, scope) {
      return { ...(await put({ summary: text, covers }, scope)), covers };
    },
    async readSummary(summary) {
      const stored = (await get(summary)) as { summary?: unknown; covers?: unknown } | undefined;
      if (typeof stored?.summary !== 'string' || stored.covers !== summary.covers)
        throw new Error(
          `stored summary ${contextKey({ ...summary, messages: 0 })} does not cover ${summary.covers} messages`,
        );
      return stored.summary;
    },
  };
}

/** The context store of a worker with these settings: its payload store and codecs. */
export function contextStoreFor(settings: Settings): ContextStore {
  let driver: StorageDriver | undefined;
  return contextStoreOn(
    () => (driver ??= driverFor(settings.payloadStore, settings.env)),
    combinedCodec(defaultPayloadCodecs(settings)),
  );
}
