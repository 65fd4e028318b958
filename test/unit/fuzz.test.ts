import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { z } from 'zod';
import { approvalFor, parseApprovers } from '../../activities/approvers';
import { capToolCalls } from '../../activities/limits';
import { createRegistry } from '../../activities/registry';
import { defineTool } from '../../activities/tool';
import { builtinTools } from '../../activities/tools';
import { createApproverKey } from '../../client/keys';
import { decisionsReceived } from '../../workflows/audit';
import { parseDecision, splitDecisions } from '../../workflows/decisions';
import { activeGrants, addGrant, grantsUpdate, revokeGrant } from '../../workflows/grants';
import { newEntry } from '../../workflows/ledger';
import { authorizeDecision } from '../../workflows/signatures';
import type { DecisionKind, LedgerEntry, ToolCall } from '../../workflows/types';
import { hostileDecision, hostileToolCall, hostileValue } from '../support/hostile';
import { intakeOver, planned } from './helpers';
import { settingsFrom } from '../../runtime/settings';

// The pure fuzz tier: every function that reads input from outside (a signal from any Temporal
// client, a model's tool calls) gets thousands of hostile values: wrong types, huge strings,
// unknown fields, unicode, prototype keys. None may throw, pollute Object.prototype, or let a
// call through without a valid approval. Seeded; a failure prints the seed and the shrunk input.

const SEED = Number(process.env.FUZZ_SEED ?? 7443);
const RUNS = Number(process.env.FUZZ_RUNS ?? 1000);
const opts = { seed: SEED, numRuns: RUNS };
const KINDS: DecisionKind[] = ['approve', 'reject', 'recover'];

const keys = mkdtempSync(path.join(tmpdir(), 'openworker-fuzz-'));
after(() => rmSync(keys, { recursive: true, force: true }));
const alice = createApproverKey('alice', keys);
const config = parseApprovers(
  { approvers: { alice: alice.publicKey }, policy: [{ tool: '*', approvers: ['alice'] }] },
  'fuzz',
);

function assertNoPollution(): void {
  const probe: Record<string, unknown> = {};
  for (const k of ['polluted', 'toolCallId', 'by', 'isAdmin', 'approvedBy'])
    assert.equal(probe[k], undefined, `Object.prototype.${k} was set`);
  assert.equal(typeof Object.prototype.toString, 'function');
}

describe(`fuzz: signal payloads (fast-check, ${RUNS} runs each, seed ${SEED})`, () => {
  afterEach(assertNoPollution);

  it('parseDecision never throws, and what it accepts is well-formed', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...KINDS),
        fc.oneof(hostileDecision('approve'), hostileDecision('recover')),
        (kind, raw) => {
          const r = parseDecision(kind, raw);
          if (!r.ok) return assert.match(r.why, new RegExp(`^malformed ${kind}: `));
          const p = r.decision.payload;
          assert.ok(typeof p.toolCallId === 'string' && p.toolCallId.length > 0 && p.toolCallId.length <= 256);
          assert.ok(typeof p.by === 'string' && p.by.length > 0 && p.by.length <= 200);
          assert.ok(Object.getPrototypeOf(p) === Object.prototype, 'a plain object');
        },
      ),
      opts,
    );
  });

  it('splitDecisions never throws; a batch is all judged or recorded once', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          hostileValue(),
          fc.record({ decisions: fc.oneof(hostileValue(), fc.array(hostileDecision('approve'), { maxLength: 120 })) }),
        ),
        (raw) => {
          const r = splitDecisions(raw);
          if (r.ok) assert.ok(r.items.length >= 1 && r.items.length <= 100);
          else assert.match(r.why, /^malformed decisions: /);
        },
      ),
      opts,
    );
  });

  it('grant, revoke and the internal grants list never throw, and keep only well-formed grants', () => {
    fc.assert(
      fc.property(hostileValue(), hostileValue(), (a, b) => {
        const added = addGrant([], a, '2026-01-01T00:00:00.000Z');
        if (added.ok) assert.ok(typeof added.grant.tool === 'string' && typeof added.grant.by === 'string');
        revokeGrant(added.ok ? added.grants : [], b, '2026-01-01T00:00:00.000Z');
        const u = grantsUpdate(b);
        for (const g of [...(u?.grants ?? []), ...activeGrants(a)])
          assert.ok(typeof g.id === 'string' && typeof g.tool === 'string' && !g.revokedAt);
      }),
      opts,
    );
  });

  it('with a policy, no flood of hostile decisions approves or recovers a call; each is recorded', () => {
    const req = approvalFor(config, 'send_email', 'bob@example.com');
    const reasons = new Map<string, number>();
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.constantFrom<DecisionKind | 'decisions'>('approve', 'recover', 'decisions', 'reject'),
            fc.oneof(hostileDecision('approve'), hostileDecision('recover')),
          ),
          { maxLength: 30 },
        ),
        (signals) => {
          let at = Date.parse('2026-12-03T10:00:00.000Z');
          const now = () => new Date((at += 1000)).toISOString();
          const waiting = { ...newEntry(planned({ toolCallId: 'c1', approval: req }), 'owx-fuzz', 1, now()) };
          const parked: LedgerEntry = {
            ...newEntry(planned({ toolCallId: 'c2', approval: req }), 'owx-fuzz-2', 1, now()),
            state: 'recovery_required',
            runs: 1,
            dispatched: true,
          };
          const ledger = new Map<string, LedgerEntry>([
            ['c1', waiting],
            ['c2', parked],
          ]);
          const { intake, decisions, recoveries } = intakeOver(ledger, { now });
          intake.modelPending(false);
          let expected = 0;
          for (const [kind, raw] of signals) {
            if (kind === 'decisions') {
              const batch = splitDecisions(raw);
              expected += batch.ok ? batch.items.length : 1;
              intake.decideMany(raw);
            } else {
              expected += 1;
              intake.decide(kind, raw);
            }
          }
          intake.flush();
          assert.equal(decisionsReceived(decisions), expected, 'every decision is in the audit, kept or counted');
          assert.ok(
            ['awaiting_approval', 'rejected'].includes(ledger.get('c1')!.state),
            `c1 is ${ledger.get('c1')!.state}`,
          );
          assert.equal(ledger.get('c1')!.approvedBy, undefined);
          assert.equal(recoveries.size, 0, 'no recovery decision was accepted');
          for (const d of decisions) {
            if (d.outcome !== 'ignored') continue;
            assert.ok(d.why && d.why.length < 3000, 'a short reason');
            const head =
              /^(malformed|unsigned|wrongly signed|unknown tool call|late|stale|duplicate|conflicting|expired|replayed|unauthorised)/.exec(
                d.why,
              )?.[1] ?? d.why.slice(0, 30);
            reasons.set(head, (reasons.get(head) ?? 0) + 1);
          }
        },
      ),
      { ...opts, numRuns: Math.ceil(RUNS / 5) },
    );
    // The flood reached the signature checks, not only the parser.
    for (const head of ['malformed', 'unsigned', 'wrongly signed', 'unknown tool call'])
      assert.ok(reasons.get(head), `no decision was refused as ${head}: ${JSON.stringify([...reasons])}`);
  });

  it('authorizeDecision never throws on a hostile signature', () => {
    const req = approvalFor(config, 'send_email', undefined);
    const entry = { executionId: 'owx-1', argsDigest: 'sha256:1', tool: 'send_email' };
    fc.assert(
      fc.property(fc.constantFrom(...KINDS), hostileDecision('approve'), (kind, raw) => {
        const d = { ...(raw && typeof raw === 'object' ? raw : {}), kind, by: 'alice' } as Parameters<
          typeof authorizeDecision
        >[2];
        const r = authorizeDecision(req, entry, d, Date.now(), new Set());
        if (kind !== 'reject') assert.equal(r.ok, false, 'a hostile signature never authorises');
      }),
      opts,
    );
  });
});

describe(`fuzz: model output (fast-check, ${RUNS} runs, seed ${SEED})`, () => {
  afterEach(assertNoPollution);
  const lookup = defineTool({
    name: 'lookup_contact',
    description: 'Find a contact.',
    input: z.object({ name: z.string() }),
    effect: 'read',
    execute: ({ name }) => ({ name }),
  });
  const registry = createRegistry([...builtinTools(settingsFrom({})), lookup]);
  const names = registry.names();

  it('planning hostile tool calls never throws; only registered tools with valid arguments are runnable', () => {
    fc.assert(
      fc.property(fc.array(hostileToolCall(names), { maxLength: 80 }), (calls) => {
        const { kept, overflow } = capToolCalls(calls as ToolCall[], 64);
        const planned = registry.plan(overflow ? [...kept, overflow.call] : kept);
        assert.ok(planned.length <= 65);
        for (const p of planned) {
          assert.equal(typeof p.toolCallId, 'string');
          assert.ok(p.toolCallId.length <= 256 && p.name.length <= 256, 'bounded ids and names');
          assert.match(p.argsDigest, /^sha256:[0-9a-f]{64}$/);
          if (!p.invalid) {
            assert.ok(names.includes(p.name), `runnable call of unregistered tool '${p.name}'`);
            assert.ok(p.spec && registry.get(p.name), 'a runnable call has its tool');
          } else assert.ok(p.invalid.length < 2000, 'a short reason');
        }
      }),
      opts,
    );
  });

  it('names that collide with Object.prototype members are unknown tools', () => {
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
      const [p] = registry.plan([{ id: 'c1', name, arguments: {} }]);
      assert.match(p!.invalid ?? '', new RegExp(`^unknown tool '${name}'`));
    }
  });
});
