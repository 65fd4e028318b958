import type { Tool } from '../tool';
import { createPaymentTool, paymentsConfigFromEnv } from './payments';
import { sendEmailTool, smtpConfigFromEnv } from './sendEmail';

/**
 * Tools every worker has unless started with builtins off, configured from the environment:
 * send_email always (it says so when SMTP is not configured), create_payment when its API is set.
 */
export function builtinTools(env: NodeJS.ProcessEnv = process.env): Tool[] {
  const payments = paymentsConfigFromEnv(env);
  return [
    sendEmailTool(smtpConfigFromEnv(env)) as unknown as Tool,
    ...(payments ? [createPaymentTool(payments) as unknown as Tool] : []),
  ];
}
