import type { RecoveryPolicy } from '../workflows/types/tool';
import type { Env } from './config';
import { readString } from './config';

// create_payment's settings, parsed from OPENWORKER_PAYMENTS_URL and the rest (the tool is
// activities/tools/payments.ts).

/** A duration: milliseconds, or a string like '30s'. */
type Duration = number | string;

export interface PaymentsConfig {
  /** Base URL; the tool POSTs to `<url>/payments` and reconciles with `GET <url>/payments/by-key/<key>`. */
  url: string;
  recovery: RecoveryPolicy;
  /** How long the API keeps keys; later retries are refused (see `idempotencyWindow`). */
  keyRetention?: Duration;
  timeout?: Duration;
}

const RECOVERIES: readonly RecoveryPolicy[] = ['idempotent', 'reconcile', 'manual'];

export function paymentsConfigFromEnv(env: Env): PaymentsConfig | undefined {
  const url = readString('OPENWORKER_PAYMENTS_URL', env);
  if (!url) return undefined;
  if (!/^https?:\/\//.test(url)) throw new Error('OPENWORKER_PAYMENTS_URL must be an http(s) URL');
  const recovery = (readString('OPENWORKER_PAYMENTS_RECOVERY', env) ?? 'idempotent') as RecoveryPolicy;
  if (!RECOVERIES.includes(recovery))
    throw new Error(`OPENWORKER_PAYMENTS_RECOVERY must be one of ${RECOVERIES.join(', ')}, got '${recovery}'`);
  const keyRetention = readString('OPENWORKER_PAYMENTS_KEY_RETENTION', env);
  const timeout = readString('OPENWORKER_PAYMENTS_TIMEOUT', env);
  return {
    url: url.replace(/\/+$/, ''),
    recovery,
    ...(keyRetention ? { keyRetention } : {}),
    ...(timeout ? { timeout } : {}),
  };
}
