import type { Env, Setting } from './config';
import { readString } from './config';

// send_email's settings, parsed from OPENWORKER_SMTP_HOST and the rest: apart from the tool so that reading the
// settings does not load the mail client.

export interface SmtpConfig {
  host: string;
  port: number;
  secure?: boolean;
  user?: string;
  pass?: string;
  from: string;
  /** Delivery lookup API (`GET <lookupUrl>/<encodeURIComponent(messageId)>`); enables reconcile. */
  lookupUrl?: string;
  /** Upper bound for one send (`'30s'`, ms); also how long reconcile waits before believing "not sent". Default 2 minutes. */
  timeout?: string;
  /**
   * With a lookup URL: `reconcile` (default) asks it on its own after an unknown outcome; `manual` parks
   * the call for a person, and a person's retry asks the lookup before sending again.
   */
  recovery?: 'manual' | 'reconcile';
}

export function smtpConfigFromEnv(env: Env): SmtpConfig | undefined {
  const get = (name: Setting) => readString(name, env);
  const host = get('OPENWORKER_SMTP_HOST');
  if (!host) return undefined;
  const secureRaw = get('OPENWORKER_SMTP_SECURE')?.toLowerCase();
  if (secureRaw !== undefined && !['true', '1', 'false', '0'].includes(secureRaw)) {
    throw new Error(`OPENWORKER_SMTP_SECURE must be true, 1, false or 0, got ${JSON.stringify(secureRaw)}`);
  }
  const secure = secureRaw === 'true' || secureRaw === '1';
  const portRaw = get('OPENWORKER_SMTP_PORT');
  const port = portRaw === undefined ? (secure ? 465 : 587) : Number(portRaw);
  if (portRaw !== undefined && (!/^\d+$/.test(portRaw) || port < 1 || port > 65535)) {
    throw new Error(`OPENWORKER_SMTP_PORT must be a port number 1-65535, got ${JSON.stringify(portRaw)}`);
  }
  const user = get('OPENWORKER_SMTP_USER');
  const pass = env['OPENWORKER_SMTP_PASS' satisfies Setting] || undefined; // not trimmed: a password may end in a space
  if (pass && !user) throw new Error('OPENWORKER_SMTP_PASS is set but OPENWORKER_SMTP_USER is not');
  const lookupUrl = get('OPENWORKER_SMTP_LOOKUP_URL');
  if (lookupUrl !== undefined && !/^https?:$/.test(safeUrlProtocol(lookupUrl))) {
    throw new Error('OPENWORKER_SMTP_LOOKUP_URL must be an http(s) URL');
  }
  const recovery = get('OPENWORKER_SMTP_RECOVERY');
  if (recovery !== undefined && recovery !== 'manual' && recovery !== 'reconcile')
    throw new Error(`OPENWORKER_SMTP_RECOVERY must be manual or reconcile, got ${JSON.stringify(recovery)}`);
  if (recovery === 'reconcile' && lookupUrl === undefined)
    throw new Error('OPENWORKER_SMTP_RECOVERY=reconcile needs OPENWORKER_SMTP_LOOKUP_URL (the lookup it asks)');
  const timeout = get('OPENWORKER_SMTP_TIMEOUT');
  if (timeout !== undefined && !/^\d+(\.\d+)?\s*(ms|s|m|seconds?|minutes?)?$/.test(timeout)) {
    throw new Error(`OPENWORKER_SMTP_TIMEOUT must be a duration like 30s or 2m, got ${JSON.stringify(timeout)}`);
  }
  return {
    host,
    port,
    secure,
    user,
    pass,
    from: get('OPENWORKER_SMTP_FROM') ?? 'openworker@localhost',
    lookupUrl,
    ...(timeout ? { timeout } : {}),
    ...(recovery ? { recovery } : {}),
  };
}

function safeUrlProtocol(url: string): string {
  try {
    return new URL(url).protocol;
  } catch {
    return '';
  }
}
