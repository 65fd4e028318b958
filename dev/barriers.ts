import type { EventEmitter } from 'node:events';

/**
 * Resolves once a fake has reported barrier `name` (for `id`, or for any id when `id` is undefined),
 * now or in its recorded `history`; rejects after `timeoutMs`, naming the fake and what it waited for.
 */
export function waitForBarrier(
  label: string,
  events: EventEmitter,
  history: readonly string[],
  name: string,
  id: string | undefined,
  timeoutMs: number,
): Promise<void> {
  const want = (line: string) => line === `${name} ${id}` || (id === undefined && line.startsWith(`${name} `));
  if (history.some(want)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = (then: () => void) => (clearTimeout(timer), events.off('barrier', on), then());
    const on = (n: string, k: string) => void (want(`${n} ${k}`) && done(resolve));
    const what = id === undefined ? name : `${name} ${id}`;
    const timer = setTimeout(
      () => done(() => reject(new Error(`${label}: "${what}" not seen within ${timeoutMs} ms`))),
      timeoutMs,
    );
    events.on('barrier', on);
  });
}
