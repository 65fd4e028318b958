import type { ModelProvider } from '../model';
import { demoModel } from './demo';
import { PROVIDER_SPECS, parseProviderSpec } from './specs';
import { loadScript, scriptedModel } from './scripted';
import type { Env } from '../../runtime/config';

export { defaultModelSpec } from './specs';
export const MODEL_SPECS = [...PROVIDER_SPECS, 'demo', 'scripted:<file.json>'];

/** Builds a model from a `--model` spec; keys and base URLs come from `env` (the settings' environment). */
export function loadModel(spec: string, env: Env): ModelProvider {
  if (spec === 'demo') return demoModel();
  const provider = parseProviderSpec(spec);
  if (provider) {
    // The AI SDK costs half a second to load: only workers that talk to a provider pay it.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { providerModel } = require('./providers') as typeof import('./providers');
    return providerModel(provider, env);
  }
  if (spec.startsWith('scripted:')) {
    const file = spec.slice('scripted:'.length);
    if (!file) throw new Error('`model` scripted:<file.json> needs a file path');
    return scriptedModel(loadScript(file), file);
  }
  const hint = /^[\w.-]+$/.test(spec) ? ` (a provider's model goes after its name, e.g. openai:${spec})` : '';
  throw new Error(`unknown \`model\` '${spec}'; use one of: ${MODEL_SPECS.join(', ')}${hint}`);
}
