import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { ModelProvider } from '../model';
import { ModelError } from '../model';

const ScriptSchema = z.object({
  steps: z.array(
    z.object({
      text: z.string().optional(),
      toolCalls: z
        .array(z.object({ id: z.string().min(1), name: z.string().min(1), arguments: z.unknown() }))
        .optional(),
    }),
  ),
});

export type Script = z.infer<typeof ScriptSchema>;

/**
 * A model that replays a script. The step for a call is the number of assistant messages already
 * in the transcript, so the same transcript always gets the same answer, across turns and workers.
 */
export function scriptedModel(script: Script, source = 'script'): ModelProvider {
  return {
    name: `scripted:${source}`,
    async generate({ messages }) {
      const index = messages.filter((m) => m.role === 'assistant').length;
      const step = script.steps[index];
      if (!step) {
        throw new ModelError(
          `scripted model ${source} has ${script.steps.length} steps but model call #${index + 1} needs step ${index}; add steps to the script`,
        );
      }
      return {
        text: step.text ?? '',
        toolCalls: (step.toolCalls ?? []).map((c) => ({ id: c.id, name: c.name, arguments: c.arguments ?? {} })),
      };
    },
  };
}

export function loadScript(file: string): Script {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(
      `\`model\` scripted:${file}: cannot read the script (${(err as Error).message.replace(/\s+/g, ' ')})`,
    );
  }
  const parsed = ScriptSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(
      `\`model\` scripted:${file}: ${issue.path.join('.') || 'file'}: ${issue.message}; expected { "steps": [ { "text"?, "toolCalls"?: [ { "id", "name", "arguments" } ] } ] }`,
    );
  }
  return parsed.data;
}
