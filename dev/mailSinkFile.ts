import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { StoredMessage } from './mailSinkState';

/** The mail sink's JSON file: the messages survive a restart of the sink. */
export function messageFile(file: string): {
  load(): Promise<StoredMessage[]>;
  write(messages: readonly StoredMessage[]): Promise<void>;
  flushed(): Promise<void>;
} {
  // Writes are chained so that two messages arriving together cannot interleave their renames.
  let writing: Promise<void> = Promise.resolve();
  return {
    load: () => loadMessages(file),
    write: (messages) => {
      const snapshot = JSON.stringify({ messages }, null, 2);
      // catch first: one failed write must not stop every later one
      writing = writing
        .catch(() => undefined)
        .then(async () => {
          const tmp = `${file}.${process.pid}.tmp`;
          await fs.mkdir(path.dirname(file), { recursive: true });
          await fs.writeFile(tmp, snapshot);
          await fs.rename(tmp, file); // atomic on POSIX: readers see the old or the new file, never half
        });
      return writing;
    },
    flushed: () => writing.catch(() => undefined),
  };
}

async function loadMessages(file: string): Promise<StoredMessage[]> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new Error(`mail sink: cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    const data = JSON.parse(text) as { messages?: unknown };
    if (!Array.isArray(data.messages)) throw new Error('no "messages" array');
    return data.messages as StoredMessage[];
  } catch (err) {
    throw new Error(`mail sink: ${file} is not a mail sink file: ${(err as Error).message}`);
  }
}
