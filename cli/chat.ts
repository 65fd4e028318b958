import { createInterface } from 'node:readline';
import type { LedgerEntry, TurnOptions } from '../workflows/types';
import { pendingFence } from '../workflows/ledger';
import { turnOf } from '../workflows/ids';
import { cancelTurn } from '../client/cancel';
import type { ApprovalAnswer } from './chatView';
import {
  approvalPrompt,
  callChange,
  parseApproval,
  parseRecovery,
  parseTypedDuringTurn,
  questionLines,
  recoveryLines,
  sentDuringTurn,
  statusLine,
  steeredInto,
  turnEnd,
} from './chatView';
import type { OpenWorkerClient } from '../client/connection';
import { answer as sendAnswer } from '../client/answers';
import { approve, checkBy, recover, reject } from '../client/decisions';
import type { DecisionOutcome } from '../client/decisions';
import { approveAlways, listGrants } from '../client/grants';
import { formatGrants } from './format';
import { StreamedLines } from './chatStream';
import { inCliTerms } from './flags';
import { activeTurn, checkSessionId, messageTurn, OpenWorkerError, sendMessage, turnStatus } from '../client/session';

export interface ChatOptions {
  sessionId: string;
  /** Who approves (default: $OPENWORKER_USER or $USER). */
  by?: string;
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream & { isTTY?: boolean };
  pollMs?: number;
  /** The limits of every turn this chat starts, over the session's. */
  options?: TurnOptions;
}

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const HELP =
  'type a message (while a turn runs it steers that turn; /queue <message> waits for a turn of its own) · /grants lists standing approvals · /exit or Ctrl-D leaves (turns keep running) · Ctrl-C cancels the running turn';

/**
 * An interactive session: messages go to the session workflow, the turn is followed by polling its
 * query, and approvals and recovery decisions are asked inline. Leaving never cancels a turn; only
 * Ctrl-C while a turn runs does.
 */
export async function runChat(c: OpenWorkerClient, o: ChatOptions): Promise<void> {
  const sessionId = checkSessionId(o.sessionId);
  const by = checkBy(o.by, c.settings.user);
  const out = o.output ?? process.stdout;
  const tty = out.isTTY === true;
  const pollMs = o.pollMs ?? 250;
  const rl = createInterface({ input: o.input ?? process.stdin, output: out, terminal: tty });

  // Lines go to an open question, else (while a turn runs) to the session at once, to steer that turn
  // or wait as the next messages (sentDuring, settled when the turn ends), else to the prompt.
  let answer: ((line: string | undefined) => void) | undefined;
  let following = false;
  let closed = false;
  const sentDuring: { messageId: string; text: string }[] = [];
  let sending: Promise<unknown> = Promise.resolve();
  const idle: string[] = [];
  let statusShown = '';
  let frame = 0;
  const streamed = new StreamedLines(out, () => clearStatus()); // the model's text as it comes

  const clearStatus = (): void => {
    if (tty && statusShown) out.write('\r\x1b[K');
    statusShown = '';
  };
  const print = (...lines: string[]): void => {
    clearStatus();
    streamed.close();
    for (const l of lines) out.write(`${l}\n`);
  };
  const status = (text: string): void => {
    if (streamed.open) return;
    if (tty) {
      out.write(`\r\x1b[K${SPINNER[frame++ % SPINNER.length]} ${text}`);
      statusShown = text;
    } else if (text !== statusShown) {
      out.write(`… ${text}\n`);
      statusShown = text;
    }
  };
  const ask = (prompt: string): Promise<string | undefined> => {
    clearStatus();
    streamed.close();
    if (closed) return Promise.resolve(undefined);
    rl.setPrompt(prompt);
    rl.prompt();
    return new Promise((resolve) => (answer = resolve));
  };

  rl.on('line', (line) => {
    if (answer) {
      const a = answer;
      answer = undefined;
      a(line);
    } else if (following) {
      const typed = parseTypedDuringTurn(line);
      if (!typed) return;
      const turn = current ? turnOf(current) : undefined;
      // In order, one at a time: the session takes them in the order typed.
      sending = sending.then(async () => {
        try {
          const sent = await sendMessage(c, { sessionId, text: typed.text, ...(typed.queue ? { queue: true } : {}) });
          sentDuring.push({ messageId: sent.messageId, text: typed.text });
          print(sentDuringTurn(turn, typed.queue));
        } catch (err) {
          print(`error: ${inCliTerms((err as Error).message.split('\n')[0]!)}`);
        }
      });
    } else idle.push(line);
  });
  rl.on('close', () => {
    closed = true;
    answer?.(undefined);
    answer = undefined;
  });

  let cancelling: { workflowId: string } | undefined;
  let current: string | undefined;
  let lastInterrupt = 0;
  rl.on('SIGINT', () => {
    if (following && current && !cancelling) {
      cancelling = { workflowId: current };
      print('^C cancelling the turn…');
      const turn = turnOf(current);
      cancelTurn(c, { sessionId, turn, waitMs: 0 }).catch((err: Error) => {
        cancelling = undefined; // not cancelled: keep asking, and let Ctrl-C try again
        print(`could not cancel: ${err.message.split('\n')[0]}`);
      });
      answer?.(undefined);
      answer = undefined;
      return;
    }
    if (Date.now() - lastInterrupt < 2000) return rl.close();
    lastInterrupt = Date.now();
    print('(Ctrl-C again or /exit leaves; running turns keep running)');
    if (!following) rl.prompt();
  });

  const decided = (kind: string, d: DecisionOutcome): void => {
    if (d.outcome === 'ignored') print(`  ${kind} NOT applied: ${d.why}`);
    else if (d.fence)
      print(
        `  retry waits out attempt ${d.fence.attempt} until ${d.fence.until} (a slow system may still apply it); decide again meanwhile with openworker-temporal recover, --now to skip`,
      );
    else if (d.outcome === 'delivered') print(`  ${kind} delivered; it takes effect when a worker runs`);
  };

  const askApproval = async (e: LedgerEntry): Promise<boolean> => {
    print(...approvalPrompt(e));
    let a: ApprovalAnswer | undefined;
    while (!a) {
      const line = await ask('approve? [y/a/t/n] ');
      if (line === undefined) return false;
      a = parseApproval(line, e);
      if (!a) print(`  answer y, a${e.target ? ', t' : ''} or n`);
    }
    const target = { sessionId, toolCallId: e.toolCallId, by, turn: turnOf(current!) };
    if (a.kind === 'once') decided('approve', await approve(c, { ...target, argsDigest: e.argsDigest }));
    else if (a.kind === 'always') {
      const d = await approveAlways(c, { ...target, argsDigest: e.argsDigest, always: a.scope });
      decided('approve', d);
      if (d.grant)
        print(
          `  granted ${d.grant.grant.id}: ${d.grant.grant.target ? `${e.tool} → ${d.grant.grant.target}` : `${e.tool}, any target`}, for this session (revoke: /grants, then openworker-temporal revoke ${sessionId} ${d.grant.grant.id})`,
        );
    } else {
      const reason = await ask('reason (the model sees it): ');
      if (reason === undefined) return false;
      decided('reject', await reject(c, { ...target, ...(reason.trim() ? { reason: reason.trim() } : {}) }));
    }
    return true;
  };

  // ask_user: the next line typed is the answer; a refused one (not a choice) is said and asked again.
  const askQuestion = async (e: LedgerEntry): Promise<boolean> => {
    print(...questionLines(e));
    for (;;) {
      const line = await ask('answer> ');
      if (line === undefined) return false;
      if (!line.trim()) continue;
      const target = { sessionId, toolCallId: e.toolCallId, by, turn: turnOf(current!), answer: line.trim() };
      const d = await sendAnswer(c, target).catch((err: Error) =>
        err instanceof OpenWorkerError && err.code === 'ignored' ? err.message : Promise.reject(err),
      );
      const why = typeof d === 'string' ? d : d.outcome === 'ignored' ? d.why : undefined;
      if (why && /not one of the choices/.test(why)) {
        print(`  ${why}`);
        continue;
      }
      if (typeof d === 'string') print(`  answer: NOT applied: ${d}`);
      else decided('answer', d);
      return true;
    }
  };

  const askRecovery = async (e: LedgerEntry): Promise<boolean> => {
    print(...recoveryLines(e));
    let d;
    while (!d) {
      const line = await ask('decide? [r/s/f] ');
      if (line === undefined) return false;
      d = parseRecovery(line);
      if (!d) print('  answer r, s or f');
    }
    decided(
      'recover',
      await recover(c, {
        sessionId,
        toolCallId: e.toolCallId,
        by,
        turn: turnOf(current!),
        decision: d,
        reason: 'decided in chat',
      }),
    );
    return true;
  };

  /** Follows one turn until it ends, asking what it needs; false when the user left mid-turn. */
  const follow = async (find: () => Promise<string | undefined>): Promise<boolean> => {
    following = true;
    cancelling = undefined;
    current = undefined;
    const seen = new Map<string, LedgerEntry>();
    const asked = new Set<string>();
    try {
      for (;;) {
        if (closed) return false;
        let t;
        try {
          if (!current && (current = await find())) streamed.follow(c, current);
          t = current
            ? await turnStatus(c, current).catch((err) =>
                err instanceof OpenWorkerError && err.code === 'not_found' ? undefined : Promise.reject(err),
              )
            : undefined;
        } catch (err) {
          // No worker right now (restarting, or not started): the turn waits durably, and so does the chat.
          if (!(err instanceof OpenWorkerError && err.code === 'no_worker')) throw err;
          status(`waiting: ${inCliTerms(err.message.replace(/^[^:]*: /, ''))}`);
          await sleep(1000);
          continue;
        }
        if (!t) {
          status('queued behind the running turn…');
          await sleep(pollMs);
          continue;
        }
        for (const e of t.ledger) {
          const lines = callChange(seen.get(e.toolCallId), e);
          if (lines.length) print(...lines);
          seen.set(e.toolCallId, e);
        }
        if (t.closed) {
          await streamed.stopFollowing();
          if (!(t.state === 'completed' && streamed.finish(t.text))) print(...turnEnd(t));
          return true;
        }
        // Ask once per call and park; a decision that no worker has applied yet is not asked again.
        const waiting = t.ledger.find((e) => e.state === 'awaiting_approval' && !asked.has(`a:${e.toolCallId}`));
        // A retry waiting out its fence is decided: not asked again.
        const parked = t.ledger.find(
          (e) =>
            e.state === 'recovery_required' && !pendingFence(e) && !asked.has(`r:${e.toolCallId}:${e.events.length}`),
        );
        if (!cancelling && waiting) {
          asked.add(`a:${waiting.toolCallId}`);
          if (!(await askApproval(waiting)) && closed) return false;
          continue;
        }
        const question = t.ledger.find((e) => e.state === 'awaiting_answer' && !asked.has(`q:${e.toolCallId}`));
        if (!cancelling && question) {
          asked.add(`q:${question.toolCallId}`);
          if (!(await askQuestion(question)) && closed) return false;
          continue;
        }
        if (!cancelling && parked) {
          asked.add(`r:${parked.toolCallId}:${parked.events.length}`);
          if (!(await askRecovery(parked)) && closed) return false;
          continue;
        }
        status(cancelling ? 'cancelling…' : t.state === 'running' ? statusLine(t) : `waiting (${t.state})…`);
        await sleep(pollMs);
      }
    } finally {
      following = false;
      await streamed.stopFollowing();
      streamed.close();
      clearStatus();
    }
  };

  print(`chat with session ${sessionId} as ${by}`, HELP);
  const running = await activeTurn(c, sessionId).catch(() => undefined);
  if (running) {
    print(`(turn ${running.turn} is running; following it)`);
    if (!(await follow(async () => running.workflowId))) return rl.close();
  }

  /** A message sent during a turn that has ended: taken by it (said so), else followed as its own turn. */
  const settle = async (m: { messageId: string; text: string }): Promise<boolean> => {
    for (;;) {
      if (closed) return false;
      const s = await messageTurn(c, sessionId, m.messageId).catch(() => undefined);
      if (s?.turn?.steered?.includes(m.messageId)) {
        print(steeredInto(s.turn.n, m.text));
        return true;
      }
      // Given to a turn the session has not seen end yet: wait; else it is (or will be) a turn of its own.
      if (s && s.steering === undefined) {
        print(`you> ${m.text}`);
        return follow(async () => (await messageTurn(c, sessionId, m.messageId)).turn?.workflowId);
      }
      await sleep(pollMs);
    }
  };

  for (;;) {
    await sending;
    const next = sentDuring.shift();
    if (next) {
      if (!(await settle(next))) break;
      continue;
    }
    const line = idle.shift() ?? (await ask('you> '));
    if (line === undefined) break;
    const text = line.trim();
    if (!text) continue;
    if (text === '/exit' || text === '/quit') break;
    if (text === '/help') {
      print(HELP);
      continue;
    }
    if (text === '/grants') {
      print(formatGrants(sessionId, await listGrants(c, sessionId).catch(() => [])));
      continue;
    }
    try {
      const sent = await sendMessage(c, { sessionId, text, ...(o.options ? { options: o.options } : {}) });
      const done = await follow(async () => (await messageTurn(c, sessionId, sent.messageId)).turn?.workflowId);
      if (!done) break;
    } catch (err) {
      print(`error: ${inCliTerms((err as Error).message.split('\n')[0]!)}`);
    }
  }
  rl.close();
  print(`left session ${sessionId}; running turns keep running (openworker-temporal show ${sessionId})`);
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
