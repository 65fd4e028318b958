import { strict as assert } from 'node:assert';
import { noopMetricMeter } from '@temporalio/common';
import { DefaultLogger } from '@temporalio/worker';
import type { WorkerOptions } from '@temporalio/worker';
import { compileWorkerOptions } from '@temporalio/worker/lib/worker-options';
import { deploymentProblem, deploymentVersion } from '../../runtime/deployment';
import { workerDeploymentOptions } from '../../worker/worker';

// Worker Deployment Versioning's flags (worker --deployment-name/--build-id, OPENWORKER_DEPLOYMENT_NAME/
// OPENWORKER_BUILD_ID): what a pair means, and the one line a bad pair gets.
describe('deployment version of a worker', () => {
  const good: [string, { deploymentName?: string; buildId?: string }, unknown][] = [
    ['neither: an unversioned worker', {}, undefined],
    ['blank both: unversioned', { deploymentName: ' ', buildId: '' }, undefined],
    ['both', { deploymentName: 'agents', buildId: 'v1' }, { deploymentName: 'agents', buildId: 'v1' }],
    ['trimmed', { deploymentName: ' agents ', buildId: ' 1.4.0 ' }, { deploymentName: 'agents', buildId: '1.4.0' }],
    [
      'a build ID may hold dots and dashes',
      { deploymentName: 'a-b_c', buildId: 'g1a2b3c.2026-12-07' },
      {
        deploymentName: 'a-b_c',
        buildId: 'g1a2b3c.2026-12-07',
      },
    ],
  ];
  for (const [name, given, want] of good)
    it(name, () => {
      assert.equal(deploymentProblem(given), undefined);
      assert.deepEqual(deploymentVersion(given), want);
    });

  const bad: [string, { deploymentName?: string; buildId?: string }, RegExp][] = [
    [
      'a build ID alone',
      { buildId: 'v1' },
      /^a build ID \(v1\) needs a deployment name: set `deploymentName` or OPENWORKER_DEPLOYMENT_NAME/,
    ],
    [
      'a name alone',
      { deploymentName: 'agents' },
      /^deployment agents needs a build ID: set `buildId` or OPENWORKER_BUILD_ID/,
    ],
    ['a dot in the name', { deploymentName: 'a.b', buildId: 'v1' }, /^deployment name 'a\.b' has a '\.'/],
    [
      'a long name',
      { deploymentName: 'x'.repeat(256), buildId: 'v1' },
      /^deployment name is 256 characters; the limit is 255/,
    ],
    ['a long build ID', { deploymentName: 'a', buildId: 'x'.repeat(300) }, /^build ID is 300 characters/],
    ['the reserved build ID', { deploymentName: 'a', buildId: '__unversioned__' }, /reserved by Temporal/],
    ['a space', { deploymentName: 'a', buildId: 'v 1' }, /printable ASCII without spaces/],
  ];
  for (const [name, given, want] of bad)
    it(`refuses ${name} in one line`, () => {
      assert.match(deploymentProblem(given)!, want);
      assert.doesNotMatch(deploymentProblem(given)!, /\n/);
      assert.throws(
        () => deploymentVersion(given),
        (err: Error) => want.test(err.message),
      );
    });

  it('a versioned worker polls as its version, PINNED by default; an unversioned one is left as it was', () => {
    const compile = (extra: Partial<WorkerOptions>) =>
      compileWorkerOptions({ taskQueue: 't', ...extra } as WorkerOptions, new DefaultLogger('ERROR'), noopMetricMeter);
    const version = { deploymentName: 'agents', buildId: 'v2' };
    assert.deepEqual(compile(workerDeploymentOptions(version)).workerDeploymentOptions, {
      useWorkerVersioning: true,
      version,
      defaultVersioningBehavior: 'PINNED',
    });
    assert.deepEqual(workerDeploymentOptions(undefined), {});
    assert.equal(compile(workerDeploymentOptions(undefined)).workerDeploymentOptions, undefined);
  });
});
