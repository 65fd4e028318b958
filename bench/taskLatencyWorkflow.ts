import { proxyActivities } from '@temporalio/workflow';

// The smallest workflows: what one workflow task and one activity cost on a server, without our code.

const { noop } = proxyActivities<{ noop(): Promise<number> }>({ startToCloseTimeout: '10s' });

export async function noActivity(): Promise<number> {
  return 0;
}

export async function oneActivity(): Promise<number> {
  return noop();
}

export async function twoActivities(): Promise<number> {
  await noop();
  return noop();
}
