import { strict as assert } from 'node:assert';
import { noopMetricMeter } from '@temporalio/common';
import { DefaultLogger } from '@temporalio/worker';
import type { WorkerOptions } from '@temporalio/worker';
import { compileWorkerOptions } from '@temporalio/worker/lib/worker-options';
import { UNTYPED_WORKER_OPTIONS } from '../../worker/worker';

// createWorker passes an option the SDK's WorkerOptions type does not declare: an SDK upgrade that
// dropped it would bring back the 5 s activation timeout, after which a flood of signals to one
// turn aborts the worker process (worker/worker.ts, ISOLATE_EXECUTION_TIMEOUT).
describe('worker options the SDK does not declare', () => {
  it('the SDK still takes isolateExecutionTimeout: one activation may run 60 s, not its default 5 s', () => {
    const compile = (extra: object) =>
      compileWorkerOptions({ taskQueue: 't', ...extra } as WorkerOptions, new DefaultLogger('ERROR'), noopMetricMeter);
    assert.equal(compile({}).isolateExecutionTimeoutMs, 5_000);
    assert.equal(compile(UNTYPED_WORKER_OPTIONS).isolateExecutionTimeoutMs, 60_000);
  });
});
