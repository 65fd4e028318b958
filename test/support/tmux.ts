import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './processes';

/** Where tests leave screenshots and screen captures (CI keeps the directory as artifacts). */
export const ARTIFACTS = process.env.OPENWORKER_ARTIFACTS ?? join(ROOT, 'test-artifacts');

/**
 * A program running in a real pseudo-terminal: a tmux session on its own server socket, driven
 * with send-keys and read with capture-pane, as a person at a terminal would.
 */
export interface Terminal {
  /** Types `text` and presses Enter (unless `enter: false`). */
  type(text: string, opts?: { enter?: boolean }): void;
  /** Sends a key by tmux name, e.g. C-c, C-d. */
  key(name: string): void;
  /** The whole screen and scrollback, as text. */
  screen(): string;
  /** Resolves with the screen once `pattern` appears after `from` characters of it (bounded). */
  waitFor(pattern: RegExp, opts?: { timeoutMs?: number; from?: number }): Promise<string>;
  /** Saves the screen under test-artifacts/<name>.txt and returns it. */
  save(name: string): string;
  close(): void;
}

export function startTerminal(name: string, argv: string[], env: Record<string, string | undefined> = {}): Terminal {
  const socket = `ow-${name}-${process.pid}-${Date.now()}`;
  const tmux = (...args: string[]): string =>
    execFileSync('tmux', ['-L', socket, '-f', '/dev/null', ...args], {
      encoding: 'utf8',
      timeout: 10_000,
      env: { ...process.env, ...env } as NodeJS.ProcessEnv,
    });
  const quoted = argv.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  tmux('new-session', '-d', '-s', 'main', '-x', '160', '-y', '50', quoted);
  tmux('set-option', '-t', 'main', 'remain-on-exit', 'on');
  // tmux drops trailing spaces; drop them everywhere, so a prompt "you> " reads "you>" at a line end.
  const screen = (): string =>
    tmux('capture-pane', '-p', '-J', '-S', '-2000', '-t', 'main')
      .split('\n')
      .map((l) => l.trimEnd())
      .join('\n')
      .replace(/\n+$/, '');
  return {
    type(text, opts = {}) {
      tmux('send-keys', '-t', 'main', '-l', text);
      if (opts.enter !== false) tmux('send-keys', '-t', 'main', 'Enter');
    },
    key: (k) => void tmux('send-keys', '-t', 'main', k),
    screen,
    async waitFor(pattern, opts = {}) {
      const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
      for (;;) {
        const s = screen();
        if (pattern.test(s.slice(opts.from ?? 0))) return s;
        if (Date.now() > deadline)
          throw new Error(
            `terminal ${name}: ${pattern} did not appear within ${opts.timeoutMs ?? 30_000} ms; the screen:\n${s}`,
          );
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    save(file) {
      const s = screen();
      mkdirSync(ARTIFACTS, { recursive: true });
      writeFileSync(join(ARTIFACTS, `${file}.txt`), `${s}\n`);
      return s;
    },
    close() {
      try {
        tmux('kill-server');
      } catch {
        // already gone
      }
    },
  };
}
