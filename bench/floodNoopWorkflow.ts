import { condition, defineQuery, defineSignal, setHandler } from '@temporalio/workflow';

// The smallest workflow a flood can hit: a signal handler that only counts. What the SDK costs per
// signal, without any of our code (npm run bench:flood -- --repro noop).

export const noopSignal = defineSignal<[unknown]>('approve');
export const countQuery = defineQuery<number>('count');
export const doneSignal = defineSignal('done');

export async function floodNoop(): Promise<number> {
  let count = 0;
  let done = false;
  setHandler(noopSignal, () => void count++);
  setHandler(doneSignal, () => void (done = true));
  setHandler(countQuery, () => count);
  await condition(() => done);
  return count;
}
