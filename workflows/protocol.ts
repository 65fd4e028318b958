import * as z from 'zod/mini';

// The protocol: every signal and update payload as one zod schema, declared here once. The types
// (re-exported by workflows/types), the parsers (workflows/decisions.ts, grants.ts, the update
// validators) and the Web UI descriptions (setHandler's `description`) derive from these.
//
// A field's error message is the reason a refused payload is recorded with: recorded histories
// replay against it, so change none without a patch. Workflow-safe: zod/mini and pure code only.
// Lengths and numbers are checked as before zod (String.length, Number.isInteger, typeof), so no value
// that was taken is refused now: zod's maxLength counts code points, its int() stops at 2^53, its
// number() refuses NaN and Infinity.

/** A string of at most `max` UTF-16 units (String.length, as limits were always counted: zod's maxLength counts code points). */
const upTo = (max: number, min: number, why: string) =>
  z.string({ error: why }).check(z.refine((s) => s.length >= min && s.length <= max, { error: why }));

/** A string of 1 to `max` characters; every way to miss it is refused with `why`. */
const text = (max: number, why: string) => upTo(max, 1, why);

const positiveInteger = (why: string) =>
  z.number({ error: why }).check(z.refine((n) => Number.isInteger(n) && n >= 1, { error: why }));

const OBJECT = 'payload must be an object';

// ---- Decisions: approve, reject, recover, and the batch of them ----

export const MAX_ID = 256;
export const MAX_BY = 200;
export const MAX_REASON = 2000;

/** The decisions a person can take on a call in recovery_required. Declared once. */
const RECOVERY = ['retry', 'succeeded', 'failed'] as const;
const RecoveryDecisionSchema = z.enum(RECOVERY, { error: `decision must be one of ${RECOVERY.join(', ')}` });
export type RecoveryDecision = z.infer<typeof RecoveryDecisionSchema>;
export const RECOVERY_DECISIONS: readonly RecoveryDecision[] = [...RECOVERY];

const KINDS = ['approve', 'reject', 'recover'] as const;
const DecisionKindSchema = z.enum(KINDS);
export type DecisionKind = z.infer<typeof DecisionKindSchema>;
export const DECISION_KINDS: readonly DecisionKind[] = [...KINDS];

const SIGNATURE = 'signature must be { keyId, signedAt, value } strings (openworker-temporal signs it for you)';

/** An approver's signature on a decision (see signedMessage in workflows/signatures.ts). */
const DecisionSignatureSchema = z.object(
  {
    keyId: text(MAX_ID, SIGNATURE),
    /** ISO time of signing; covered by the signature. */
    signedAt: text(40, SIGNATURE),
    /** The Ed25519 signature, base64. */
    value: text(MAX_ID, SIGNATURE),
  },
  { error: SIGNATURE },
);
export type DecisionSignature = z.infer<typeof DecisionSignatureSchema>;

/**
 * The fields of every decision, in the order they are checked: the first that fails is the reason.
 * executionId (and, for recover, run and park) binds a decision to what its sender saw: one whose
 * execution ID differs from the call's is ignored, so a stale decision cannot land on another call.
 */
/** The fields that name a decision; a refused one is recorded with those of them that are well-formed. */
const DECISION_IDS = {
  toolCallId: text(MAX_ID, `toolCallId must be a non-empty string of at most ${MAX_ID} characters`),
  by: text(MAX_BY, `by must name who decided (1-${MAX_BY} characters)`),
  decisionId: text(MAX_ID, 'decisionId must be a non-empty string'),
};
const decisionFields = {
  toolCallId: DECISION_IDS.toolCallId,
  by: DECISION_IDS.by,
  /** Optional client-chosen id, so the sender can find its decision in the ledger. */
  decisionId: z.optional(DECISION_IDS.decisionId),
  /** Checked on every kind; kept by reject and recover. */
  reason: z.optional(upTo(MAX_REASON, 0, `reason must be a string of at most ${MAX_REASON} characters`)),
  executionId: z.optional(text(MAX_ID, 'executionId must be a non-empty string')),
  /** An approver's signature; required for approve and recover when the worker has a policy. */
  signature: z.optional(DecisionSignatureSchema),
};

const EDITED = 'arguments must be an object: the edited arguments the call is to run with';
const ApproveSchema = z.object(
  {
    ...decisionFields,
    argsDigest: z.optional(text(MAX_ID, 'argsDigest must be a string like sha256:<hex>')),
    /** Approve with edits: the arguments the call runs with instead (workflows/edits.ts). */
    arguments: z.optional(
      z.custom<Record<string, unknown>>((v) => !!v && typeof v === 'object' && !Array.isArray(v), { error: EDITED }),
    ),
  },
  { error: OBJECT },
);
const RejectSchema = z.object(decisionFields, { error: OBJECT });
const RecoverSchema = z.object(
  {
    ...decisionFields,
    decision: RecoveryDecisionSchema,
    /** The run (ledger `runs`) whose unknown outcome this decides. */
    run: z.optional(positiveInteger('run must be a positive integer')),
    /** Which time the call parked in recovery_required (1 = the first) the sender saw and answers. */
    park: z.optional(positiveInteger('park must be a positive integer')),
    /**
     * retry only: run at once instead of waiting until the last dispatched attempt can no longer be
     * running (its start-to-close window). For an operator who knows that attempt is gone; audited.
     */
    skipFence: z.optional(z.boolean({ error: 'skipFence must be true or false' })),
    /** With succeeded: what the tool returned, as the person found it (at most 256 KiB, decisions.ts). */
    result: z.optional(z.unknown()),
  },
  { error: OBJECT },
);

// Approve takes no reason: it is checked (as on every decision) but not kept.
export type ApproveSignal = Omit<z.infer<typeof ApproveSchema>, 'reason'>;
export type RejectSignal = z.infer<typeof RejectSchema>;
export type RecoverSignal = z.infer<typeof RecoverSchema>;

/** At most this many decisions in one `decisions` signal (one model response's calls, with room). */
export const MAX_BATCH = 100;
const BATCH = 'expected { decisions: [{ kind, toolCallId, by, … }] } with at least one decision';

/**
 * What the batch is checked for as a whole; each item is then checked as its own signal would be
 * (workflows/decisions.ts splitDecisions), so a malformed item does not refuse the others.
 */
const DecisionsEnvelopeSchema = z.object(
  {
    decisions: z.array(z.unknown(), { error: BATCH }).check(
      z.minLength(1, { error: BATCH }),
      z.maxLength(MAX_BATCH, {
        error: (iss) => `${(iss.input as unknown[]).length} decisions in one signal; at most ${MAX_BATCH}`,
      }),
    ),
  },
  { error: BATCH },
);

export type BatchedDecision =
  ({ kind: 'approve' } & ApproveSignal) | ({ kind: 'reject' } & RejectSignal) | ({ kind: 'recover' } & RecoverSignal);
export interface DecisionsSignal {
  decisions: BatchedDecision[];
}

// ---- The session's signals: message, grant, revoke; and the turn's internal `grants` ----

/** A user message; the session's own rules (workflows/limits.ts sessionMessageProblem) judge it. */
const SessionMessageSchema = z.object({
  text: z.string(),
  messageId: z.optional(z.string()),
  /** This turn's limits over the session's (ranges and reasons: workflows/turnOptions.ts). */
  options: z.optional(z.object({ maxIterations: z.optional(z.number()) })),
  /** Wait for a turn of its own instead of steering the running turn (workflows/steering.ts). */
  queue: z.optional(z.boolean()),
});
export type SessionMessageSignal = z.infer<typeof SessionMessageSchema>;

/** Internal: the session gives a message that arrived while the turn runs to its next model call. */
const SteerSignalSchema = z.object({ messageId: z.string(), text: z.string() });
export type SteerSignal = z.infer<typeof SteerSignalSchema>;

export const MAX_GRANT_ID = 100;
export const MAX_NAME = 200;

const GrantSignalSchema = z.object(
  {
    grantId: text(MAX_GRANT_ID, `grantId must be a non-empty string of at most ${MAX_GRANT_ID} characters`),
    tool: text(MAX_NAME, 'tool must name a tool'),
    by: text(MAX_NAME, 'by must name who grants'),
    target: z.optional(text(MAX_NAME, `target must be a non-empty string of at most ${MAX_NAME} characters`)),
  },
  { error: OBJECT },
);
export type GrantSignal = z.infer<typeof GrantSignalSchema>;

const RevokeSignalSchema = z.object(
  {
    grantId: text(MAX_GRANT_ID, 'grantId and by are required'),
    by: text(MAX_NAME, 'grantId and by are required'),
  },
  { error: OBJECT },
);
export type RevokeSignal = z.infer<typeof RevokeSignalSchema>;

/**
 * A standing approval: later calls of `tool` in the session (to `target` only, when set) are
 * approved by it. Revoked grants stay listed for the audit. A turn takes a grant whose id, tool,
 * by and target are well-formed (GrantCheckSchema) and that is not revoked.
 */
const GrantSchema = z.object({
  id: text(MAX_GRANT_ID, 'id'),
  tool: text(MAX_NAME, 'tool'),
  target: z.optional(text(MAX_NAME, 'target')),
  by: text(MAX_NAME, 'by'),
  at: z.string(),
  revokedAt: z.optional(z.string()),
  revokedBy: z.optional(z.string()),
});
export type Grant = z.infer<typeof GrantSchema>;
const GrantCheckSchema = z.pick(GrantSchema, { id: true, tool: true, target: true, by: true });

/** Internal: the session's active grants, versions increasing. */
const GrantsSignalSchema = z.object({ version: positiveInteger('version'), grants: z.array(GrantSchema) });
export type GrantsSignal = z.infer<typeof GrantsSignalSchema>;
/** What a `grants` signal is checked for as a whole; each grant is then taken or dropped alone. */
const GrantsEnvelopeSchema = z.extend(GrantsSignalSchema, { grants: z.array(z.unknown()) });

// ---- ask_user: a person's answer to a question a call asks (workflows/answers.ts) ----

export const MAX_ANSWER = 8000;
const AnswerSchema = z.object(
  {
    toolCallId: DECISION_IDS.toolCallId,
    by: DECISION_IDS.by,
    answer: text(MAX_ANSWER, `answer must be a non-empty string of at most ${MAX_ANSWER} characters`),
    decisionId: z.optional(DECISION_IDS.decisionId),
  },
  { error: OBJECT },
);
export type AnswerSignal = z.infer<typeof AnswerSchema>;

/**
 * Every schema, shared by all turns: worker/bundle.ts preloads this module once per worker (else each
 * cached turn would build its own, ~0.17 MiB), and the sandbox then freezes what a preloaded module
 * exports. zod completes a schema on its first use, so the schemas are kept out of the exports, in
 * this closure the freeze does not reach, and handed out by `schemas()`.
 */
const SCHEMAS = {
  approve: ApproveSchema,
  reject: RejectSchema,
  recover: RecoverSchema,
  recoveryDecision: RecoveryDecisionSchema,
  decisionKind: DecisionKindSchema,
  decisionIds: DECISION_IDS,
  decisionsEnvelope: DecisionsEnvelopeSchema,
  signature: DecisionSignatureSchema,
  message: SessionMessageSchema,
  grant: GrantSignalSchema,
  revoke: RevokeSignalSchema,
  grantRecord: GrantSchema,
  grantCheck: GrantCheckSchema,
  grants: GrantsSignalSchema,
  grantsEnvelope: GrantsEnvelopeSchema,
  steer: SteerSignalSchema,
  answer: AnswerSchema,
};
export const schemas = (): typeof SCHEMAS => SCHEMAS;

// ---- Checking a payload: the first issue, as one line ----

/** The first problem with `raw` under `schema` (its field's message), or the parsed value. */
export function checkPayload<T extends z.ZodMiniType>(
  schema: T,
  raw: unknown,
): { ok: true; value: z.infer<T> } | { ok: false; why: string; field?: string } {
  // jitless: the same interpreted parser in the workflow sandbox and everywhere else, no `new Function`.
  const r = schema.safeParse(raw, { jitless: true });
  if (r.success) return { ok: true, value: r.data as z.infer<T> };
  const issue = r.error.issues[0];
  const field = issue.path[0];
  return { ok: false, why: issue.message, ...(typeof field === 'string' ? { field } : {}) };
}

/** Whether `value` passes `schema` (a field of one, usually). */
export const passes = (schema: z.ZodMiniType, value: unknown): boolean =>
  schema.safeParse(value, { jitless: true }).success;

// ---- The descriptions the Web UI shows ----

type Def = {
  type: string;
  shape?: Record<string, { _zod: { def: Def; optin?: string } }>;
  innerType?: { _zod: { def: Def } };
  element?: { _zod: { def: Def } };
  entries?: Record<string, string>;
};

const shapeOf = (def: Def): string => {
  if (def.type === 'optional' && def.innerType) return shapeOf(def.innerType._zod.def);
  if (def.type === 'enum' && def.entries) return Object.values(def.entries).join('|');
  if (def.type === 'array' && def.element) return `[${shapeOf(def.element._zod.def)}]`;
  if (def.type === 'object' && def.shape) {
    const fields = Object.entries(def.shape).map(([name, s]) => {
      const inner = s._zod.def.type === 'optional' ? s._zod.def.innerType!._zod.def : s._zod.def;
      const opt = s._zod.optin === 'optional' ? '?' : '';
      // Enums show their values, objects and arrays their shape; plain fields their name.
      return inner.type === 'enum' || inner.type === 'array' ? `${name}${opt}: ${shapeOf(inner)}` : `${name}${opt}`;
    });
    return `{ ${fields.join(', ')} }`;
  }
  return def.type;
};

/** A payload's fields as the Web UI lists them: `{ toolCallId, decision: retry|succeeded|failed, run?, … }`. */
export const describe = (schema: z.ZodMiniType): string => shapeOf(schema._zod.def as unknown as Def);

/** setHandler's `description` of each signal and update, derived from its schema. */
export const DESCRIPTIONS = {
  approve: `Approve a tool call: ${describe(z.omit(ApproveSchema, { reason: true }))}. argsDigest and executionId bind it to the call you saw; arguments approves it with these instead (checked by the tool's schema); one that is not applied shows in the current details.`,
  reject: `Reject a tool call: ${describe(RejectSchema)}. One that is not applied shows in the current details.`,
  recover: `Resolve a recovery_required call: ${describe(RecoverSchema)}. One that is not applied shows in the current details.`,
  decisions: `Several decisions at once: { decisions: [{ kind: ${DECISION_KINDS.join('|')}, …the fields of that signal }] }, at most ${MAX_BATCH}, each judged as if sent alone.`,
  message: `A user message: ${describe(SessionMessageSchema)}. While a turn runs it steers that turn (its next model call sees it) unless queue is true`,
  grant: `Add a standing approval: ${describe(GrantSignalSchema)}`,
  revoke: `Revoke a standing approval: ${describe(RevokeSignalSchema)}`,
  grants: `Internal: the session’s active grants, ${describe(GrantsSignalSchema)}`,
  steer: `Internal: a user message for this turn's next model call, ${describe(SteerSignalSchema)}`,
  answer: `Answer a question the ask_user tool asks: ${describe(AnswerSchema)}. With choices, the answer must be one of them (or its number); one that is not applied shows in the current details.`,
} as const;
