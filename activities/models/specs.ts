/**
 * `--model` specs for real providers: `openai:<model>`, `anthropic:<model>` and
 * `openai-compatible:<model>@<baseURL>` (Ollama, vLLM, LM Studio, OpenRouter …). No SDK here.
 */
export { defaultModelSpec } from '../../runtime/settings';

export type ProviderName = 'openai' | 'anthropic' | 'openai-compatible';
export interface ProviderSpec {
  provider: ProviderName;
  model: string;
  baseURL?: string;
}

export const PROVIDER_SPECS = ['openai:<model>', 'anthropic:<model>', 'openai-compatible:<model>@<baseURL>'];

/** Parses a provider `--model` spec; undefined if `spec` names no provider. */
export function parseProviderSpec(spec: string): ProviderSpec | undefined {
  const m = /^(openai|anthropic|openai-compatible):(.*)$/.exec(spec);
  if (!m) return undefined;
  const provider = m[1] as ProviderName;
  let model = m[2]!.trim();
  let baseURL: string | undefined;
  if (provider === 'openai-compatible') {
    const at = model.indexOf('@');
    if (at < 0)
      throw new Error(
        `\`model\` ${spec}: expected openai-compatible:<model>@<baseURL>, e.g. openai-compatible:llama3.1@http://localhost:11434/v1`,
      );
    baseURL = model.slice(at + 1).trim();
    model = model.slice(0, at).trim();
    if (!/^https?:\/\/[^\s/]+/.test(baseURL))
      throw new Error(`\`model\` ${spec}: the base URL must be an http(s) URL, got '${baseURL}'`);
  }
  if (!model || /\s/.test(model))
    throw new Error(
      `\`model\` ${spec}: name a model, e.g. ${provider === 'anthropic' ? 'anthropic:claude-sonnet-4-5' : 'openai:gpt-4.1'}`,
    );
  return { provider, model, ...(baseURL ? { baseURL: baseURL.replace(/\/+$/, '') } : {}) };
}
