import type { ModelProvider } from '../model';
import { demoModel } from './demo';
import { loadScript, scriptedModel } from './scripted';

export const MODEL_SPECS = ['demo', 'scripted:<file.json>'];

/** Builds a model from a `--model` spec. */
export function loadModel(spec: string): ModelProvider {
  if (spec === 'demo') return demoModel();
  if (spec.startsWith('scripted:')) {
    const file = spec.slice('scripted:'.length);
    if (!file) throw new Error('--model scripted:<file.json> needs a file path');
    return scriptedModel(loadScript(file), file);
  }
  throw new Error(`unknown --model '${spec}'; use one of: ${MODEL_SPECS.join(', ')}`);
}
