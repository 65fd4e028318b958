import type { BundleOptions } from '@temporalio/worker';

// How the workflow bundle is built: at build time (scripts/bundleWorkflows.ts) and, when that file is
// missing, at worker start.

/**
 * Modules the workflow sandbox evaluates once and shares between turns; otherwise every cached turn
 * evaluates its own copy (~0.08 MiB a turn for these). Pure code only: a preloaded module must hold
 * no per-workflow state.
 */
export const PRELOADED_WORKFLOW_MODULES = ['@noble/curves/ed25519', '@noble/hashes/sha256', '@noble/hashes/utils'];

export const workflowBundlerOptions: Pick<BundleOptions, 'preloadModules' | 'webpackConfigHook'> = {
  preloadModules: PRELOADED_WORKFLOW_MODULES,
  // @noble declares "sideEffects": false, so webpack would drop a preload's bare require().
  webpackConfigHook: (config) => ({
    ...config,
    module: {
      ...config.module,
      rules: [...(config.module?.rules ?? []), { test: /[\\/]@noble[\\/]/, sideEffects: true }],
    },
  }),
};
