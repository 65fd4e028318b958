// The public functions that read one family of settings from an environment: an entry point each,
// so `env` defaults to this process's, read at the call. Inside the package, Settings carries these
// values (runtime/settings.ts).
import { loadModel as loadModelIn } from '../activities/models';
import { defaultModelSpec as defaultModelSpecIn } from '../runtime/settings';
import type { PaymentsConfig } from '../runtime/paymentsConfig';
import { paymentsConfigFromEnv as paymentsConfigIn } from '../runtime/paymentsConfig';
import type { SmtpConfig } from '../runtime/smtpConfig';
import { smtpConfigFromEnv as smtpConfigIn } from '../runtime/smtpConfig';
import type { ModelProvider } from '../activities/model';
import type { Env } from '../runtime/config';

/** Builds a model from a `--model` spec; keys and base URLs come from `env`. */
export const loadModel = (spec: string, env: Env = process.env): ModelProvider => loadModelIn(spec, env);

/** The model `dev` and `worker` use when no `--model` is given: a configured provider, else the demo. */
export const defaultModelSpec = (env: Env = process.env): string => defaultModelSpecIn(env);

/** send_email's SMTP settings (OPENWORKER_SMTP_HOST and the rest), or undefined when no host is set. */
export const smtpConfigFromEnv = (env: Env = process.env): SmtpConfig | undefined => smtpConfigIn(env);

/** create_payment's settings (OPENWORKER_PAYMENTS_URL and the rest), or undefined when no URL is set. */
export const paymentsConfigFromEnv = (env: Env = process.env): PaymentsConfig | undefined => paymentsConfigIn(env);
