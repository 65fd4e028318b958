import type { Settings } from '../../runtime/settings';
import type { Tool } from '../tool';
import { askUserTool } from './askUser';
import { createPaymentTool } from './payments';
import { sendEmailTool } from './sendEmail';

/**
 * Tools every worker has unless started with builtins off, configured by the settings:
 * send_email always (it says so when SMTP is not configured), create_payment when its API is set,
 * ask_user always (a person answers it; nothing runs).
 */
export function builtinTools({ smtp, payments }: Pick<Settings, 'smtp' | 'payments'>): Tool[] {
  return [
    sendEmailTool(smtp) as unknown as Tool,
    askUserTool as unknown as Tool,
    ...(payments ? [createPaymentTool(payments) as unknown as Tool] : []),
  ];
}
