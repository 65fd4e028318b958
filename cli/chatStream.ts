import type { OpenWorkerClient } from '../client/connection';
import type { TextEvent } from '../client/stream';
import { streamTurn } from '../client/stream';

/**
 * What is left to print of a turn's answer after its text was streamed: the rest, when the streamed
 * line is the start of the answer; undefined (print the whole answer) when it is not.
 */
export function answerRest(streamed: string | undefined, answer: string): string | undefined {
  if (!streamed || !answer.startsWith(streamed)) return undefined;
  return answer.slice(streamed.length);
}

/**
 * The model's text in chat as it is generated: one `assistant: ` line per model call, written as the
 * deltas come. Anything else printed closes the line first (`close`), so the line that is still open
 * at the end of the turn is the start of its answer, and only the rest is printed.
 */
export class StreamedLines {
  /** The open line's text (undefined when no line is open). */
  private line: string | undefined;
  private intact = true;
  private stop: AbortController | undefined;
  private running: Promise<void> = Promise.resolve();

  /** `opening` runs before a line opens (clears a status line). */
  constructor(
    private readonly out: NodeJS.WritableStream,
    private readonly opening: () => void = () => undefined,
  ) {}

  get open(): boolean {
    return this.line !== undefined;
  }

  write(e: TextEvent): void {
    if (e.restart) this.close();
    if (this.line === undefined) {
      this.opening();
      this.out.write('assistant: ');
      this.line = '';
    }
    this.out.write(e.gap ? `… ${e.delta}` : e.delta);
    this.line += e.delta;
    // After a gap the line is no longer the answer's start: the answer is printed whole.
    if (e.gap) this.intact = false;
  }

  close(): void {
    if (this.line !== undefined) this.out.write('\n');
    this.line = undefined;
    this.intact = true;
  }

  /** Follows one turn's model calls until `stopFollowing`. */
  follow(c: OpenWorkerClient, workflowId: string): void {
    this.stop = new AbortController();
    const events = streamTurn(c, { workflowId, signal: this.stop.signal, throughDecisions: true });
    this.running = (async () => {
      for await (const e of events) this.write(e);
    })().catch(() => undefined); // streaming is best effort: the answer comes whole at the end anyway
  }

  async stopFollowing(): Promise<void> {
    this.stop?.abort();
    await this.running;
  }

  /** Ends the turn: prints the rest of the answer on the open line, or closes it and returns false. */
  finish(answer: string | undefined): boolean {
    const rest = answer === undefined || !this.intact ? undefined : answerRest(this.line, answer);
    if (rest === undefined) {
      this.close();
      return false;
    }
    this.out.write(`${rest}\n`);
    this.line = undefined;
    this.intact = true;
    return true;
  }
}
