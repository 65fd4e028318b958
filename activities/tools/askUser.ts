import { z } from 'zod';
import { MAX_ANSWER_TIMEOUT_S } from '../../workflows/answers';
import { defineTool, ToolFailure } from '../tool';

/**
 * ask_user: the model asks the person a question and the turn waits, durably, for the answer
 * (workflows/answers.ts). A person answers from chat, `openworker-temporal answer`, the approvals
 * app or the `answer` signal; the answer is the result. Nothing runs: no activity, no effect.
 */
export const askUserTool = defineTool({
  name: 'ask_user',
  description:
    'Ask the user a question and wait for their answer, which is this call’s result. Use it when you need a decision or a fact only the user has. With `choices`, the user picks one of them. With `timeoutSeconds`, you are told if no answer came by then.',
  input: z.object({
    question: z.string().min(1).max(2000).describe('The question, as the user will read it'),
    choices: z
      .array(z.string().min(1).max(200))
      .min(2)
      .max(20)
      .optional()
      .describe('The answers the user may pick from; omit for a free-text answer'),
    timeoutSeconds: z
      .number()
      .positive()
      .max(MAX_ANSWER_TIMEOUT_S)
      .optional()
      .describe('How long to wait for an answer; omit to wait until the user answers'),
  }),
  effect: 'read',
  requiresApproval: false,
  answeredByPerson: true,
  local: false,
  // Never run by the turn: a person's answer is the result. A worker of an older build would get here.
  execute: () => {
    throw new ToolFailure('ask_user is answered by a person with the `answer` signal; this worker cannot run it');
  },
});
