import { strict as assert } from 'node:assert';
import { QueryNotRegisteredError, ServiceError } from '@temporalio/client';
import type { PollerTimes } from '../../client/workers';
import { polledSince, unanswered } from '../../client/workers';

// How the CLI tells "no worker" from "a slow worker" (client/workers.ts): a query nobody took, and
// whether any worker polled since, from the server's poller list.

describe('workers: whether some worker polled between two readings of the poller list', () => {
  const times = (...entries: [string, number][]): PollerTimes => new Map(entries);
  const cases: [string, PollerTimes, PollerTimes, boolean][] = [
    ['no pollers, before or after', times(), times(), false],
    ['a dead worker, still listed as it was', times(['w1', 1_000]), times(['w1', 1_000]), false],
    ['a worker that took the query polled again', times(['w1', 1_000]), times(['w1', 4_000]), true],
    ['a worker that started meanwhile', times(['w1', 1_000]), times(['w1', 1_000], ['w2', 3_000]), true],
    [
      'the dead one listed, its replacement not polling since',
      times(['w1', 1_000], ['w2', 2_000]),
      times(['w1', 1_000], ['w2', 2_000]),
      false,
    ],
    ['a worker dropped from the list (its entry expired) is no poll', times(['w1', 1_000]), times(), false],
  ];
  for (const [name, before, after, want] of cases) it(name, () => assert.equal(polledSince(before, after), want));
});

describe('workers: a query unanswered (its deadline passed) or failed', () => {
  const grpc = (code: number, details: string) => Object.assign(new Error(`${code} ${details}`), { code, details });
  const cases: [string, unknown, boolean][] = [
    [
      "the SDK's wrapper of the client's deadline",
      new ServiceError('Failed to query Workflow', {
        cause: grpc(4, 'DEADLINE_EXCEEDED: Deadline exceeded after 1.250s'),
      }),
      true,
    ],
    [
      'the status code alone',
      new ServiceError('Failed to query Workflow', { cause: Object.assign(new Error('x'), { code: 4 }) }),
      true,
    ],
    ['a server-side timeout', new Error('query timed out'), true],
    [
      'the server unreachable',
      new ServiceError('Failed to query Workflow', { cause: grpc(14, 'UNAVAILABLE: No connection established') }),
      false,
    ],
    ['a query the workflow does not know', new QueryNotRegisteredError('unknown queryType messageTurn', 3), false],
    ['any other failure', new Error('boom'), false],
    ['not an error', 'deadline', false],
  ];
  for (const [name, err, want] of cases) it(name, () => assert.equal(unanswered(err), want));
});
