/**
 * Worker Deployment Versioning (docs/deploy.md, "Deploying while turns wait"): a worker started with a
 * deployment name and a build ID polls as that version only. Pure: the flags and OPENWORKER_DEPLOYMENT_NAME /
 * OPENWORKER_BUILD_ID are checked here, the worker options are made in worker/worker.ts.
 */
export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

/** Temporal's limit on both names; the canonical form `name.buildId` is why a name has no dot. */
const MAX_CHARS = 255;
const UNVERSIONED = '__unversioned__';

/** What is wrong with a deployment name and build ID given together or apart, or undefined (unversioned, or a good version). */
export function deploymentProblem(given: { deploymentName?: string; buildId?: string }): string | undefined {
  const name = given.deploymentName?.trim();
  const build = given.buildId?.trim();
  if (!name && !build) return undefined;
  if (!name)
    return `a build ID (${build}) needs a deployment name: set \`deploymentName\` or OPENWORKER_DEPLOYMENT_NAME too, or neither for an unversioned worker`;
  if (!build)
    return `deployment ${name} needs a build ID: set \`buildId\` or OPENWORKER_BUILD_ID too (e.g. the release's commit), or neither for an unversioned worker`;
  if (name.includes('.'))
    return `deployment name '${name}' has a '.', which Temporal uses between name and build ID: use another character`;
  if (name.length > MAX_CHARS) return `deployment name is ${name.length} characters; the limit is ${MAX_CHARS}`;
  if (build.length > MAX_CHARS) return `build ID is ${build.length} characters; the limit is ${MAX_CHARS}`;
  if (build === UNVERSIONED) return `build ID '${UNVERSIONED}' is reserved by Temporal for unversioned workers`;
  if (!/^[\x21-\x7e]+$/.test(name + build))
    return `deployment name and build ID take printable ASCII without spaces, got '${name}' and '${build}'`;
  return undefined;
}

/** The version a worker polls as, or undefined for an unversioned worker; a bad pair throws one line. */
export function deploymentVersion(given: { deploymentName?: string; buildId?: string }): DeploymentVersion | undefined {
  const problem = deploymentProblem(given);
  if (problem) throw new Error(problem);
  const deploymentName = given.deploymentName?.trim();
  const buildId = given.buildId?.trim();
  return deploymentName && buildId ? { deploymentName, buildId } : undefined;
}
