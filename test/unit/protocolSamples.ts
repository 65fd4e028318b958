import { parseDecision, splitDecisions } from '../../workflows/decisions';
import { addGrant, grantsUpdate } from '../../workflows/grants';
import { checkPayload, DESCRIPTIONS, schemas } from '../../workflows/protocol';
import type { DecisionKind } from '../../workflows/types';

// A few payloads through every parser, run by test/unit/protocol.test.ts in a process where the
// protocol's module is frozen as the workflow sandbox freezes a preloaded one.

const KINDS: DecisionKind[] = ['approve', 'reject', 'recover'];
const S = schemas();
const base = { toolCallId: 'call_1', by: 'alice' };

/** Every parser over a few payloads: the same in a frozen copy and here. */
export const samples = (): unknown[] => {
  const raws = [null, base, { ...base, decision: 'retry', run: 2 }, { ...base, decision: 'nope' }, { toolCallId: '' }];
  return [
    ...KINDS.flatMap((kind) => raws.map((raw) => parseDecision(kind, raw))),
    ...raws.map((raw) => splitDecisions({ decisions: [{ kind: 'approve', ...(raw ?? {}) }] })),
    ...[{ grantId: 'g', tool: 't', by: 'b' }, { grantId: '' }].map((raw) => addGrant([], raw, 'now')),
    grantsUpdate({ version: 1, grants: [{ id: 'g', tool: 't', by: 'b', at: 'now' }] }),
    checkPayload(S.steer, { messageId: 'm', text: 't' }),
    checkPayload(S.answer, { toolCallId: 'c' }),
    DESCRIPTIONS,
  ];
};
