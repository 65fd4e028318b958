// Lint that guards what the compiler cannot: forgotten awaits, promises passed where a plain
// callback is expected, and non-deterministic Node APIs in workflow code (which runs in the
// Temporal workflow sandbox and must replay identically).
import { builtinModules } from 'node:module';
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import tseslint from 'typescript-eslint';

// Every Node built-in in both spellings ('fs' and 'node:fs'). Modules that exist only with the
// prefix (node:test, node:sea, node:sqlite) are listed explicitly so the set does not depend on
// which Node version runs the lint.
const nodeBuiltins = [
  ...new Set([
    ...builtinModules.flatMap((m) => (m.startsWith('node:') ? [m] : [m, `node:${m}`])),
    'node:sea',
    'node:sqlite',
    'node:test',
    'node:test/reporters',
  ]),
].sort();

const WORKFLOW_BUILTIN_MESSAGE =
  'Workflow code must be deterministic and runs in the Temporal workflow sandbox, where Node built-ins are unavailable. ' +
  'Do I/O in an activity; use @temporalio/workflow (sleep, uuid4, condition, log) inside the workflow.';

// Not Node built-ins, but the workflow bundler rejects them too: they talk to the network or the
// worker and cannot run in the sandbox. (`import type` from them is fine and stays allowed.)
const temporalNonWorkflowPackages = [
  '@temporalio/activity',
  '@temporalio/client',
  '@temporalio/worker',
  '@temporalio/testing',
  '@temporalio/envconfig',
];

// Folders depend downward only: workflows ← runtime ← activities ← worker ← client ← apps ← cli (and dev/);
// api/ (the package's entry points) above all.
// `layer(...folders)` forbids importing those folders from the files a block covers.
const layer = (...folders) => ({
  group: folders.flatMap((f) => [`../${f}`, `../${f}/**`, `../../${f}`, `../../${f}/**`]),
  message:
    'Folders depend downward only (workflows ← runtime ← activities ← worker ← client ← apps ← cli, dev; api/ on top): move the shared piece down, e.g. into runtime/.',
});

// Workflow code, and the package entry users import from theirs (api/workflow.ts).
const workflowSafe = (files, forbidden) => ({
  files,
  rules: {
    // The typescript-eslint form of no-restricted-imports: same options, but it also sees
    // `import x = require('fs')` and lets erased `import type` through.
    '@typescript-eslint/no-restricted-imports': [
      'error',
      {
        paths: [
          ...nodeBuiltins.map((name) => ({ name, message: WORKFLOW_BUILTIN_MESSAGE, allowTypeImports: true })),
          ...temporalNonWorkflowPackages.map((name) => ({
            name,
            message:
              'This package cannot run in the Temporal workflow sandbox; workflow code may import only @temporalio/workflow and @temporalio/common (import type is fine).',
            allowTypeImports: true,
          })),
        ],
        patterns: [layer(...forbidden)],
      },
    ],
    'no-restricted-globals': [
      'error',
      {
        name: 'setTimeout',
        message:
          'Workflow code must be deterministic: use sleep() from @temporalio/workflow (a durable timer that a CancellationScope can cancel), or condition(fn, timeout).',
      },
      {
        name: 'setInterval',
        message:
          'Workflow code must be deterministic: setInterval does not exist in the Temporal sandbox; loop with sleep() from @temporalio/workflow.',
      },
      {
        name: 'setImmediate',
        message:
          'Workflow code must be deterministic: setImmediate does not exist in the Temporal sandbox; use sleep() or condition() from @temporalio/workflow.',
      },
      {
        name: 'process',
        message:
          'Workflow code must be deterministic and runs in the Temporal sandbox, which has no `process`: pass configuration in the workflow input, read the environment in an activity.',
      },
      {
        name: 'require',
        message:
          'Workflow code runs in the Temporal sandbox: use a static import of a deterministic module, never require().',
      },
    ],
  },
});

export default defineConfig(
  globalIgnores(['dist/', 'node_modules/', '.openworker/', 'test/fixtures/', 'bin/', 'scripts/*.mjs']),

  js.configs.recommended,
  tseslint.configs.recommended,

  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // A promise nobody awaits loses its rejection (an unhandled rejection crashes Node 20), and in a
      // workflow an un-awaited SDK call races the rest of the code. Use `void` for fire-and-forget.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',

      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          caughtErrorsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
        },
      ],
      // No-op callbacks (quiet loggers, `.catch(() => {})` after a logged failure) are intentional here.
      '@typescript-eslint/no-empty-function': 'off',
    },
  },

  workflowSafe(
    ['workflows/**/*.ts'],
    ['activities', 'runtime', 'worker', 'client', 'cli', 'apps', 'dev', 'api', 'bench'],
  ),
  // What your workflow imports: the workflows only.
  workflowSafe(
    ['api/workflow.ts', 'api/protocol.ts'],
    ['activities', 'runtime', 'worker', 'client', 'cli', 'apps', 'dev', 'bench'],
  ),

  {
    files: ['activities/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [layer('worker', 'client', 'dev', 'bench')] }],
    },
  },
  {
    files: ['runtime/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [layer('activities', 'worker', 'client', 'cli', 'apps', 'dev', 'api', 'bench')] },
      ],
    },
  },
  {
    files: ['worker/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [layer('client', 'cli', 'apps', 'dev', 'api', 'bench')] },
      ],
    },
  },
  // The library: no command line, no server, no dev launcher in it.
  {
    files: ['client/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [layer('cli', 'apps', 'dev', 'api', 'bench')] },
      ],
    },
  },
  // The servers (approvals app, codec endpoint) build on the library, never on the command line.
  {
    files: ['apps/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [layer('cli', 'dev', 'api', 'bench')] }],
    },
  },
  {
    files: ['cli/**/*.ts', 'dev/**/*.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [layer('api', 'bench')] }] },
  },
);
