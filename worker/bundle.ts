import type { BundleOptions } from '@temporalio/worker';
import { dirname, join } from 'node:path';

// How the workflow bundle is built: at build time (scripts/bundleWorkflows.ts) and, when that file is
// missing, at worker start.

/**
 * Modules the workflow sandbox evaluates once and shares between turns; otherwise every cached turn
 * evaluates its own copy (~0.08 MiB a turn for these). Pure code only: a preloaded module must hold
 * no per-workflow state.
 */
export const PRELOADED_WORKFLOW_MODULES = [
  '@noble/curves/ed25519',
  '@noble/hashes/sha256',
  '@noble/hashes/utils',
  // zod and the protocol's schemas (workflows/protocol.ts): ~0.6 and ~0.17 MiB a turn otherwise.
  'zod/mini',
  join(__dirname, '..', 'workflows', 'protocol'),
];

/**
 * zod's translated error messages (~0.4 MB of source): zod/mini and zod's core re-export them but never
 * use them, and the protocol's schemas carry their own messages. Left out for requests from those two
 * only: a workflow of yours that imports zod itself still gets zod's locales.
 */
const zodLocales = join(dirname(require.resolve('zod/v4/locales')), 'index');

export const workflowBundlerOptions: Pick<BundleOptions, 'preloadModules' | 'webpackConfigHook'> = {
  preloadModules: PRELOADED_WORKFLOW_MODULES,
  // @noble and zod declare "sideEffects": false, so webpack would drop a preload's bare require().
  webpackConfigHook: (config) => ({
    ...config,
    module: {
      ...config.module,
      rules: [
        ...(config.module?.rules ?? []),
        { test: /[\\/](@noble|zod)[\\/]/, sideEffects: true },
        {
          test: /[\\/]zod[\\/]v4[\\/](mini|core)[\\/]/,
          resolve: { alias: { [`${zodLocales}.cjs`]: false, [`${zodLocales}.js`]: false } },
        },
      ],
    },
  }),
};
