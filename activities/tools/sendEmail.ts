import { Readable } from 'node:stream';
import MailComposer from 'nodemailer/lib/mail-composer';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import { z } from 'zod';
import { defineTool, ToolFailure, type ReconcileAnswer, type ToolContext } from '../tool';
import type { SmtpConfig } from '../../runtime/smtpConfig';

export { smtpConfigFromEnv, type SmtpConfig } from '../../runtime/smtpConfig';

export interface SendEmailResult {
  messageId: string;
  accepted: string[];
  rejected?: string[];
  /** The server's reply to the end of DATA. */
  response?: string;
  /** Set when the result comes from reconcile() rather than from a send. */
  reconciled?: boolean;
}

/** Thrown when the message data may have reached the server: the send may or may not have happened. */
export class EmailOutcomeUnknown extends Error {
  constructor(
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'EmailOutcomeUnknown';
  }
}

/** The lookup URL without credentials or query, fit for an error message. */
function displayUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

// RFC 5322 dot-atom text: what may stand left of the '@' in a Message-ID without quoting.
const MSG_ID_LEFT = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;

/** The same execution ID always gives the same Message-ID, so a retry can be looked up. */
export function messageIdFor(executionId: string): string {
  if (!MSG_ID_LEFT.test(executionId) || executionId.length > 64) {
    throw new ToolFailure(`execution ID ${JSON.stringify(executionId)} cannot be used in a Message-ID`);
  }
  return `<${executionId}@openworker-temporal>`;
}

const inputSchema = z.object({
  to: z.email().describe('Recipient email address'),
  subject: z.string().min(1).max(998).describe('Subject line'),
  body: z.string().max(100_000).describe('Plain-text body'),
  cc: z.array(z.email()).max(20).optional().describe('Optional cc addresses'),
});
type SendEmailInput = z.infer<typeof inputSchema>;

export function sendEmailTool(config: SmtpConfig | undefined) {
  const lookupUrl = config?.lookupUrl;
  return defineTool({
    name: 'send_email',
    description:
      'Send a plain-text email through the configured SMTP server. A human approves each email before it is sent; ' +
      'the email is sent at most once per approval.',
    input: inputSchema,
    // The schema allows a 100 000-character body; its JSON may take several bytes a character.
    maxArgsBytes: 512 * 1024,
    effect: 'external',
    requiresApproval: true,
    recovery: lookupUrl ? (config?.recovery ?? 'reconcile') : 'manual',
    target: (input) => input.to,
    ...(config?.timeout ? { timeouts: { startToClose: config.timeout } } : {}),
    execute: async (input, ctx): Promise<SendEmailResult> => {
      if (!config) throw new ToolFailure('SMTP is not configured: set OPENWORKER_SMTP_HOST');
      const messageId = messageIdFor(ctx.executionId);
      // Building the message sends nothing, so a failure here is a definite "not sent".
      let built: { raw: Buffer; envelope: { from: string | false; to: string[] } };
      try {
        const node = new MailComposer({
          from: config.from,
          to: input.to,
          cc: input.cc,
          subject: input.subject,
          text: input.body,
          messageId,
        }).compile();
        built = { raw: await node.build(), envelope: node.getEnvelope() };
      } catch (err) {
        throw new ToolFailure(`email not sent: could not build the message: ${firstLine((err as Error).message)}`);
      }
      const info = await deliver(config, built.envelope, built.raw, ctx);
      return { messageId, accepted: info.accepted, rejected: info.rejected, response: info.response };
    },
    reconcile: lookupUrl ? (input, ctx) => reconcileByLookup(lookupUrl, input, ctx) : undefined,
  });
}

interface NodemailerErrorFields {
  message: string;
  code?: string;
  command?: string;
  responseCode?: number;
  originalCode?: string;
}

type Stage = 'connect' | 'auth' | 'envelope' | 'data';

/**
 * One SMTP session: connect, log in, send. The message body is handed to nodemailer as a stream
 * that marks when it is first read; nodemailer reads it only after the server answered DATA with
 * 354. Before that point the server cannot hold the message, so any failure means "not applied";
 * from that point on a failure leaves the outcome unknown.
 */
function deliver(
  config: SmtpConfig,
  envelope: { from: string | false; to: string[] },
  raw: Buffer,
  ctx: ToolContext,
): Promise<{ accepted: string[]; rejected: string[]; response: string }> {
  return new Promise((resolve, reject) => {
    let stage: Stage = 'connect';
    let settled = false;
    const step = (next: Stage) => {
      stage = next;
      try {
        ctx.heartbeat({ smtp: next });
      } catch {
        // progress details are best effort; they must never change the outcome
      }
    };
    const conn = new SMTPConnection({
      host: config.host,
      port: config.port,
      secure: config.secure ?? false,
      logger: false,
      connectionTimeout: 15_000,
      greetingTimeout: 15_000,
      dnsTimeout: 15_000,
      socketTimeout: 60_000,
    });
    const finish = (
      err: NodemailerErrorFields | null,
      info?: { accepted: string[]; rejected: string[]; response: string },
    ) => {
      if (settled) return;
      settled = true;
      ctx.signal.removeEventListener('abort', onAbort);
      if (err || !info) {
        conn.close();
        return reject(classify(err ?? { message: 'no result from nodemailer' }, stage, config));
      }
      resolve(info); // first: the message is accepted, nothing after this may turn it into a failure
      try {
        conn.quit();
        setTimeout(() => conn.close(), 2_000).unref(); // a server that never answers QUIT
      } catch {
        conn.close();
      }
    };
    const onAbort = () => finish({ message: 'the tool call was cancelled', code: 'EABORT', command: 'API' });
    if (ctx.signal.aborted) return onAbort();
    ctx.signal.addEventListener('abort', onAbort, { once: true });
    // Without a listener an 'error' event would throw; the callbacks below report the same errors.
    conn.on('error', (err: NodemailerErrorFields) => finish(err));

    const body = new Readable({
      read() {
        step('data');
        this.push(raw);
        this.push(null);
      },
    });
    const send = () => {
      step('envelope');
      conn.send(envelope, body, (err, info) => {
        if (err) return finish(err);
        finish(null, { accepted: info.accepted, rejected: info.rejected, response: info.response });
      });
    };
    step('connect');
    conn.connect((err) => {
      if (err) return finish(err);
      if (!config.user) return send();
      step('auth');
      conn.login({ user: config.user, pass: config.pass ?? '' }, (err) => (err ? finish(err) : send()));
    });
  });
}

/** The one place that decides between "definitely not applied" and "unknown". */
function classify(err: NodemailerErrorFields, stage: Stage, config: SmtpConfig): Error {
  const code = err.code ?? 'unknown error';
  const reply = err.responseCode ? ` (server replied ${err.responseCode})` : '';
  const reason = redact(firstLine(err.message), config);
  const details = { code: err.code, command: err.command, responseCode: err.responseCode, stage };
  if (stage === 'data') {
    const why =
      err.code === 'EABORT'
        ? 'the send was cancelled after the message data started to be sent'
        : err.code === 'EMESSAGE'
          ? `the server replied ${err.responseCode ?? 'with an error'} to the end of the message data`
          : err.code === 'ETIMEDOUT'
            ? 'no reply to the end of the message data arrived in time'
            : err.code === 'ECONNECTION' || err.code === 'ESOCKET'
              ? 'the connection was lost after the message data started to be sent'
              : `${code} after the message data started to be sent: ${reason}`;
    return new EmailOutcomeUnknown(
      `send_email outcome unknown: ${why}; the server may have accepted the message`,
      details,
    );
  }
  const where = `${config.host}:${config.port}`;
  let message: string;
  if (err.code === 'EABORT') message = 'cancelled before the message was sent';
  else if (err.command === 'RCPT TO') message = `all recipients were rejected${reply}: ${reason}`;
  else if (err.command === 'MAIL FROM') message = `the sender was rejected${reply}: ${reason}`;
  else if (err.command === 'DATA') message = `the server refused the DATA command${reply}: ${reason}`;
  else if (err.code === 'EAUTH' || err.code === 'ENOAUTH') message = `SMTP authentication failed${reply}: ${reason}`;
  else if (stage === 'connect')
    message = `could not connect to SMTP server ${where} (${err.originalCode ?? code}): ${reason}`;
  else message = `SMTP session with ${where} failed before the message was sent (${code}): ${reason}`;
  return new ToolFailure(`email not sent: ${message}`, details);
}

function firstLine(text: string): string {
  return (text.split(/\r?\n/, 1)[0] ?? '').slice(0, 300);
}

/** Secrets never reach a result or an error message, even if a server echoes them. */
function redact(text: string, config: SmtpConfig): string {
  const secrets = [config.pass, config.pass && Buffer.from(config.pass).toString('base64')].filter(
    (s): s is string => !!s && s.length >= 3,
  );
  return secrets.reduce((t, s) => t.split(s).join('***'), text);
}

async function reconcileByLookup(
  lookupUrl: string,
  input: SendEmailInput,
  ctx: ToolContext,
): Promise<ReconcileAnswer<SendEmailResult>> {
  const messageId = messageIdFor(ctx.executionId);
  const url = `${lookupUrl.replace(/\/+$/, '')}/${encodeURIComponent(messageId)}`;
  const where = displayUrl(lookupUrl);
  let status: number;
  let body: { delivered?: unknown; message?: { to?: unknown } } | null | undefined;
  try {
    const res = await fetch(url, { signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(5_000)]) });
    status = res.status;
    body = (await res.json().catch(() => undefined)) as typeof body;
  } catch (err) {
    return { status: 'unknown', reason: `delivery lookup at ${where} failed: ${firstLine((err as Error).message)}` };
  }
  if (status === 200 && body?.delivered === true) {
    const to = body.message?.to;
    const accepted =
      Array.isArray(to) && to.every((a) => typeof a === 'string') ? (to as string[]) : [input.to, ...(input.cc ?? [])];
    return { status: 'applied', result: { messageId, accepted, reconciled: true } };
  }
  // Only an explicit "not delivered" counts: a 404 from a wrong URL must not license a resend.
  if (status === 404 && body?.delivered === false) return { status: 'not_applied' };
  return { status: 'unknown', reason: `delivery lookup at ${where} answered ${status} without a delivery verdict` };
}
