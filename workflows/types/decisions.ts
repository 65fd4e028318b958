// People's decisions (approve, reject, recover) and the dispatch marker's request. Plain data only: everything here crosses Temporal's data converter and lands in history.

// The payloads themselves are zod schemas in workflows/protocol.ts; their types are re-exported here.
export type {
  AnswerSignal,
  ApproveSignal,
  BatchedDecision,
  DecisionKind,
  DecisionsSignal,
  RecoverSignal,
  RejectSignal,
} from '../protocol';
import type { DecisionKind } from '../protocol';

/** Every decision a turn received, applied or not. */
export interface DecisionRecord {
  at: string;
  /** `decisions`: a batch signal that was malformed as a whole; `answer`: an answer to an ask_user call. */
  kind: DecisionKind | 'decisions' | 'answer';
  toolCallId?: string;
  by?: string;
  decisionId?: string;
  outcome: 'applied' | 'ignored';
  why?: string;
  /** The key whose valid signature the decision carried. */
  signedBy?: string;
  /** The one record that counts the decisions not applied that the turn did not keep (workflows/audit.ts). */
  omitted?: number;
}
