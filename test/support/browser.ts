import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { ARTIFACTS } from './tmux';

// Headless Chromium for the Web UI tests: offline flags, a fresh profile per launch, and a reader
// that waits for text to appear anywhere on the page (markdown renders in sandboxed frames).

export const CHROMIUM = [process.env.OPENWORKER_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (p) => p && existsSync(p),
);
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-dev-shm-usage',
];

/** Skips the suite without chromium, except in CI; call from `before`. */
export function requireChromium(ctx: Mocha.Context): void {
  if (CHROMIUM) return;
  console.log('      (skipped: no chromium found; .ci/run installs it, or set OPENWORKER_CHROMIUM)');
  if (process.env.CI) throw new Error('CI must have chromium: .ci/run installs it');
  ctx.skip();
}

/** launch() gives the browser a fresh temporary profile (user-data dir) of its own. */
export const launchBrowser = (): Promise<Browser> =>
  chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });

export async function shot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** The page's text (all frames) once it matches `pattern`; fails after 30 s with what it shows. */
export async function pageText(page: Page, pattern: RegExp, what: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const texts = await Promise.all(
      page.frames().map((f) =>
        f
          .locator('body')
          .innerText({ timeout: 2000 })
          .catch(() => ''),
      ),
    );
    const body = texts.join('\n');
    if (pattern.test(body)) return body;
    if (Date.now() > deadline)
      throw new Error(`${what}: ${pattern} not on the page ${page.url()}; it shows:\n${body.slice(0, 3000)}`);
    await page.waitForTimeout(250);
  }
}
