import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './processes';

// The MCP servers the tests run: the real ones from node_modules, and our recorder
// (test/support/mcpRecorder.ts), which writes what it sees to a JSONL log.

/** A server's launcher in node_modules/.bin (run it with node). */
export const mcpBin = (name: string): string => join(ROOT, 'node_modules', '.bin', name);

/** The compiled recorder server. */
export const RECORDER = join(__dirname, 'mcpRecorder.js');

/** Every event the recorder logged to `file`, oldest first; none before it started. */
export function recorderEvents(file: string): Record<string, unknown>[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}
