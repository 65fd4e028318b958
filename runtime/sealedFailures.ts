import { DefaultFailureConverter } from '@temporalio/common';

// Loaded by path (Temporal's `failureConverterPath`) when payloads are encrypted: a failure's message
// and stack trace then travel as a payload, which the encryption codec seals like any other. Tool
// errors quote what external systems said (addresses, account names), and history would otherwise
// keep them in plain text. Any converter decodes such failures, so readers need no setting.
export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
