import type { Tool } from '../tool';
import { sendEmailTool, smtpConfigFromEnv } from './sendEmail';

/** Tools every worker has unless started with builtins off. Configured from the environment. */
export function builtinTools(env: NodeJS.ProcessEnv = process.env): Tool[] {
  return [sendEmailTool(smtpConfigFromEnv(env)) as unknown as Tool];
}
