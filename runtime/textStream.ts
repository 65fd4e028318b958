// Streaming a model call's text (docs/chat-and-webui.md, "Streaming"). The model activity publishes
// the text so far as its heartbeat details; readers describe the turn and compute what is new. Pure:
// the worker side builds snapshots, the client side turns successive snapshots into deltas.

/** What a model call's heartbeat carries while it streams: the end of its text so far. */
export interface StreamSnapshot {
  /** The model call's iteration in its turn. */
  iteration: number;
  /** The text so far, from character `offset` on (the head is dropped past the cap). */
  text: string;
  /** How many characters of the text came before `text`. */
  offset: number;
  /** Counts the snapshots of this attempt. */
  seq: number;
  /** The activity attempt: a retried model call starts its text over. */
  attempt?: number;
  /** The model has finished its text (the call may still be ending). */
  done?: boolean;
}

/** Heartbeat details hold at most this many characters of text: a window on its end. */
export const STREAM_WINDOW_CHARS = 16_000;

/** The snapshot of `full` text: its last `window` characters. */
export function snapshotOf(
  iteration: number,
  full: string,
  seq: number,
  done = false,
  window = STREAM_WINDOW_CHARS,
  attempt?: number,
): StreamSnapshot {
  const offset = Math.max(0, full.length - window);
  return {
    iteration,
    text: full.slice(offset),
    offset,
    seq,
    ...(attempt !== undefined ? { attempt } : {}),
    ...(done ? { done: true } : {}),
  };
}

export function isStreamSnapshot(v: unknown): v is StreamSnapshot {
  if (typeof v !== 'object' || v === null) return false;
  const s = v as StreamSnapshot;
  return (
    typeof s.text === 'string' &&
    Number.isInteger(s.offset) &&
    s.offset >= 0 &&
    Number.isInteger(s.iteration) &&
    Number.isInteger(s.seq)
  );
}

/** A heartbeat's stream snapshot, if it carries one (`{ stream: StreamSnapshot }`). */
export function streamOf(heartbeat: unknown): StreamSnapshot | undefined {
  const s = (heartbeat as { stream?: unknown } | null | undefined)?.stream;
  return isStreamSnapshot(s) ? s : undefined;
}

/** Where a reader is in one model call's text. */
export interface StreamCursor {
  iteration: number;
  /** Characters of the text seen so far. */
  length: number;
  /** The last snapshot's `seq`: a lower one is a retried attempt. */
  seq: number;
  attempt?: number;
}

/** What a reader shows of a new snapshot. */
export interface StreamStep {
  /** The text to append to what was shown. */
  delta: string;
  /**
   * The shown text no longer matches: a new model call (next iteration) or a retried attempt
   * started over. Start a new block; `delta` is the snapshot's whole text.
   */
  restart: boolean;
  /** Characters were missed (the reader fell behind the window): shown as a gap. */
  gap: boolean;
  cursor: StreamCursor;
}

/**
 * The delta between what a reader has seen and a new snapshot. A snapshot whose text is shorter
 * than what was seen, of another attempt or with a lower `seq` (a retried attempt) or of another iteration restarts; one whose window starts
 * after what was seen leaves a gap. The same snapshot twice gives an empty delta.
 */
export function nextDelta(cursor: StreamCursor | undefined, s: StreamSnapshot): StreamStep {
  const end = s.offset + s.text.length;
  const fresh =
    !cursor ||
    cursor.iteration !== s.iteration ||
    cursor.attempt !== s.attempt ||
    end < cursor.length ||
    s.seq < cursor.seq;
  const seen = fresh ? 0 : cursor.length;
  const gap = s.offset > seen;
  return {
    delta: gap ? s.text : s.text.slice(seen - s.offset),
    restart: fresh && cursor !== undefined,
    gap,
    cursor: {
      iteration: s.iteration,
      length: end,
      seq: s.seq,
      ...(s.attempt !== undefined ? { attempt: s.attempt } : {}),
    },
  };
}
