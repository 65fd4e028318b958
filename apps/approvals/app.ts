import { Hono, type Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { bodyLimit } from 'hono/body-limit';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { csrf } from 'hono/csrf';
import { secureHeaders } from 'hono/secure-headers';
import { streamSSE } from 'hono/streaming';
import type { OpenWorkerClient } from '../../client/connection';
import { listGrants, revoke } from '../../client/grants';
import { OpenWorkerError } from '../../client/session';
import { turnText } from '../../client/stream';
import { callView, decide, resolveCall, signRequest, waitingCalls, type CallRef, type DecisionRequest } from './calls';
import { answerCall, type AnswerRequest } from './calls';
import { PAGE_CSS, PAGE_HTML, PAGE_JS } from './page';
import { operatorOf } from './tokens';
import { reservedName } from '../../workflows/deciders';

// The approvals app: a page and a JSON API over the client library. Stateless: who you are comes
// with each request (a token, or a trusted proxy's header), what it shows is read from Temporal,
// what it does is a signal; replicas behind a load balancer need only the same settings.

export interface ApprovalsOptions {
  client: OpenWorkerClient;
  /** The operators' tokens file; default the client's settings (OPENWORKER_APPROVALS_TOKENS, else in the state dir). */
  tokensFile?: string;
  /** A reverse proxy's authenticated-user header (e.g. X-Forwarded-User); the proxy must set it on every request. */
  trustHeader?: string;
  /** How often the live inbox (server-sent events) reads Temporal again. */
  pollMs?: number;
  /** Cookies marked Secure: on when the app is served over https. */
  secureCookie?: boolean;
}

const COOKIE = 'openworker_token';
const STATUS: Record<OpenWorkerError['code'], 400 | 404 | 409 | 502 | 503 | 504> = {
  bad_input: 400,
  not_found: 404,
  ignored: 409,
  no_worker: 503,
  timeout: 504,
  failed: 502,
};

type Env = { Variables: { operator: string } };

export function approvalsApp(o: ApprovalsOptions): Hono<Env> {
  const file = o.tokensFile ?? o.client.settings.approvalsTokens;
  const app = new Hono<Env>();
  app.use(
    '*',
    secureHeaders({
      contentSecurityPolicy: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        frameAncestors: ["'none'"],
        formAction: ["'self'"],
      },
    }),
  );
  app.get('/', (c) => c.html(PAGE_HTML));
  app.get('/app.js', (c) => c.body(PAGE_JS, 200, { 'content-type': 'text/javascript; charset=utf-8' }));
  app.get('/app.css', (c) => c.body(PAGE_CSS, 200, { 'content-type': 'text/css; charset=utf-8' }));

  // Writes: same origin only (Origin / Sec-Fetch-Site), JSON only (a form elsewhere cannot send it
  // without a preflight, which is never answered), bounded.
  app.use('/api/*', csrf(), bodyLimit({ maxSize: 256 * 1024 }));
  app.use('/api/*', async (c, next) => {
    if (c.req.method === 'POST' && !/^application\/json\b/i.test(c.req.header('content-type') ?? ''))
      return c.json({ error: 'send application/json' }, 415);
    return next();
  });

  app.post('/api/session', async (c) => {
    const { token } = await c.req.json<{ token?: unknown }>().catch(() => ({ token: undefined }));
    const name = typeof token === 'string' ? operatorOf(token, file) : undefined;
    if (!name)
      return c.json({ error: 'unknown token: ask an admin for one (approvals token create --name <you>)' }, 401);
    if (reservedName(name)) return c.json({ error: reservedOperator(name) }, 403);
    setCookie(c, COOKIE, token as string, { httpOnly: true, sameSite: 'Strict', path: '/', secure: o.secureCookie });
    return c.json({ name });
  });
  app.post('/api/logout', (c) => {
    deleteCookie(c, COOKIE, { path: '/' });
    return c.body(null, 204);
  });

  app.use('/api/*', async (c, next) => {
    const who = identify(c, o.trustHeader, file);
    if (!who)
      return c.json(
        { error: 'sign in: a token (Authorization: Bearer <token>, or the sign-in form), or the proxy header' },
        401,
      );
    // A token file or a proxy may hand over any name; the system's own are never a person's.
    if (reservedName(who)) return c.json({ error: reservedOperator(who) }, 403);
    c.set('operator', who);
    return next();
  });

  app.get('/api/me', (c) => c.json({ name: c.get('operator') }));
  app.get('/api/inbox', async (c) => c.json(await waitingCalls(o.client)));
  app.get('/api/calls/:executionId', async (c) => {
    const ref = await resolveCall(o.client, c.req.param('executionId'), refFromQuery(c));
    return c.json(await callView(o.client, ref));
  });
  const decisionOf = async (c: Context): Promise<DecisionRequest> => {
    const body = await c.req.json<Partial<DecisionRequest>>().catch(() => undefined);
    if (!body || typeof body.executionId !== 'string' || typeof body.action !== 'string')
      throw new OpenWorkerError('send { executionId, action, argsDigest, reason?, result?, signature? }', 'bad_input');
    if (typeof body.argsDigest !== 'string')
      throw new OpenWorkerError(
        'argsDigest is required: a decision is bound to the arguments it was made on',
        'bad_input',
      );
    return body as DecisionRequest;
  };
  // The running model call's text so far (streaming, docs/chat-and-webui.md): the call page polls it.
  app.get('/api/turns/:sessionId/:turn/text', async (c) =>
    c.json(await turnText(o.client, c.req.param('sessionId'), Number(c.req.param('turn')))),
  );
  app.post('/api/decisions', async (c) => {
    const outcome = await decide(o.client, c.get('operator'), await decisionOf(c));
    return c.json(outcome, outcome.outcome === 'ignored' ? 409 : 200);
  });
  // ask_user: the operator's answer to a question (docs/approvals.md).
  app.post('/api/answers', async (c) => {
    const body = await c.req.json<AnswerRequest>().catch(() => undefined);
    const outcome = await answerCall(o.client, c.get('operator'), body!);
    return c.json(outcome, outcome.outcome === 'ignored' ? 409 : 200);
  });
  // What the operator's browser key signs for a decision; the signature then goes with /api/decisions.
  app.post('/api/sign-request', async (c) =>
    c.json(await signRequest(o.client, c.get('operator'), await decisionOf(c))),
  );
  app.get('/api/sessions/:sessionId/grants', async (c) => c.json(await listGrants(o.client, c.req.param('sessionId'))));
  app.post('/api/grants/revoke', async (c) => {
    const body = await c.req.json<{ sessionId?: unknown; grantId?: unknown }>().catch(() => undefined);
    if (typeof body?.sessionId !== 'string' || typeof body.grantId !== 'string')
      throw new OpenWorkerError('send { sessionId, grantId }', 'bad_input');
    return c.json(await revoke(o.client, { sessionId: body.sessionId, grantId: body.grantId, by: c.get('operator') }));
  });
  app.get('/api/events', (c) =>
    streamSSE(c, async (stream) => {
      let closed = false;
      stream.onAbort(() => void (closed = true));
      while (!closed) {
        // The live list must stay live: a turn slow to answer shows at a later refresh.
        const data = await waitingCalls(o.client).then(
          (listing) => ({ event: 'inbox', data: JSON.stringify(listing) }),
          (err: Error) => ({ event: 'problem', data: JSON.stringify({ error: oneLine(err) }) }),
        );
        await stream.writeSSE(data);
        await stream.sleep(o.pollMs ?? 2000);
      }
    }),
  );

  app.onError((err, c) => {
    if (err instanceof HTTPException) return c.json({ error: oneLine(err) || 'refused' }, err.status);
    if (err instanceof OpenWorkerError) return c.json({ error: oneLine(err) }, STATUS[err.code]);
    // Messages only: a stack or a payload never reaches the log or the page.
    console.error(`approvals: ${c.req.method} ${c.req.path}: ${oneLine(err)}`);
    return c.json({ error: oneLine(err) }, 500);
  });
  return app;
}

const oneLine = (err: Error): string => err.message.split('\n')[0]!;

const reservedOperator = (name: string): string =>
  `operator name ${reservedName(name)!}: sign in under a name of your own (approvals token create --name <you>, or your proxy's user)`;

/** Who is asking: the trusted proxy's header, else a bearer token, else the sign-in cookie. */
function identify(c: Context, trustHeader: string | undefined, file: string): string | undefined {
  const proxied = trustHeader ? c.req.header(trustHeader)?.trim() : undefined;
  if (proxied) return proxied.slice(0, 64);
  const bearer = /^Bearer\s+(\S+)$/i.exec(c.req.header('authorization') ?? '')?.[1];
  return operatorOf(bearer ?? getCookie(c, COOKIE), file);
}

function refFromQuery(c: Context): Partial<CallRef> {
  const turn = Number(c.req.query('turn'));
  return {
    ...(c.req.query('session') ? { sessionId: c.req.query('session') } : {}),
    ...(Number.isInteger(turn) && turn > 0 ? { turn } : {}),
    ...(c.req.query('call') ? { toolCallId: c.req.query('call') } : {}),
  };
}
