import { z } from 'zod';
import { ToolFailure, UnknownOutcome, defineTool } from '../tool';
import type { PaymentsConfig } from '../../runtime/paymentsConfig';

export { paymentsConfigFromEnv, type PaymentsConfig } from '../../runtime/paymentsConfig';

type PaymentResult = Record<string, unknown>;

const input = z.object({
  customer: z.string().min(1).max(200),
  amount: z.number().int().positive(),
  currency: z.string().length(3).optional(),
});

/**
 * `create_payment`: an HTTP API with Idempotency-Key semantics (the IETF draft), the shape of most
 * payment and ordering APIs. The execution ID is the key, so retries of one tool call can apply at
 * most once while the API remembers the key.
 */
export function createPaymentTool(config: PaymentsConfig) {
  return defineTool({
    name: 'create_payment',
    description: 'Charge a customer. Each call is approved by a human and charges at most once.',
    input,
    effect: 'external',
    recovery: config.recovery,
    target: (i) => i.customer,
    ...(config.keyRetention ? { idempotencyWindow: config.keyRetention } : {}),
    timeouts: { startToClose: config.timeout ?? '30s', heartbeat: '5s' },
    async execute(args, ctx): Promise<PaymentResult> {
      let res: Response;
      try {
        res = await fetch(`${config.url}/payments`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': ctx.executionId },
          body: JSON.stringify(args),
          signal: ctx.signal,
        });
      } catch (err) {
        const code = (err as { cause?: { code?: string } }).cause?.code;
        // Refused before a byte was sent: the API cannot have applied anything.
        if (code === 'ECONNREFUSED') throw new ToolFailure(`payments API unreachable (${code}); nothing was charged`);
        throw new Error(
          `payments API did not answer (${code ?? (err as Error).message}); the charge may or may not have happened`,
        );
      }
      const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
      const replayed = res.headers.get('idempotent-replayed') === 'true';
      if (res.status === 200 || res.status === 201) return { ...body, replayed };
      if (res.status === 400)
        throw new ToolFailure(`payments API refused the request: ${String(body.error ?? 'bad request')}`);
      if (res.status === 409)
        throw new Error('an earlier attempt with this key is still in flight at the payments API');
      if (res.status === 422) {
        throw new UnknownOutcome(
          'the payments API already has this key with different arguments (payload drift); an earlier attempt may have charged',
        );
      }
      if (replayed)
        throw new UnknownOutcome(
          `the payments API replays a stored HTTP ${res.status} for this key: it committed a failure answer`,
        );
      throw new Error(`payments API answered HTTP ${res.status}; the charge may or may not have happened`);
    },
    ...(config.recovery === 'reconcile'
      ? {
          async reconcile(args: z.infer<typeof input>, ctx: { executionId: string; signal: AbortSignal }) {
            const res = await fetch(`${config.url}/payments/by-key/${encodeURIComponent(ctx.executionId)}`, {
              signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(5000)]),
            }).catch((err: Error) => ({ status: 0, statusText: err.message }) as Response);
            if (res.status === 200) {
              const found = (await res.json()) as { status?: number; response?: Record<string, unknown> };
              const stored = found.response ?? {};
              // The key holds a failure answer: something was committed, but not necessarily a charge.
              if (typeof found.status !== 'number' || found.status >= 300) {
                return {
                  status: 'unknown' as const,
                  reason: `the payments API stored HTTP ${found.status} for this key`,
                };
              }
              // The key was used for another payment (an older build, another caller): not ours to claim.
              if (
                stored.customer !== args.customer ||
                stored.amount !== args.amount ||
                stored.currency !== (args.currency ?? 'USD')
              ) {
                return {
                  status: 'unknown' as const,
                  reason: 'the payments API holds this key for a different payment (payload drift)',
                };
              }
              return { status: 'applied' as const, result: { ...stored, reconciled: true } as PaymentResult };
            }
            if (res.status === 404) return { status: 'not_applied' as const };
            return {
              status: 'unknown' as const,
              reason:
                res.status === 409
                  ? 'still in flight at the payments API'
                  : `lookup answered ${res.status || res.statusText}`,
            };
          },
        }
      : {}),
  });
}
