import AxeBuilder from '@axe-core/playwright';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestApp, type TestContext } from './app.js';
import { launchChromium } from './browser.js';
import { builtConsole } from './build.js';
import { freePort } from './net.js';

/**
 * The console in headless Chromium against a service started for the suite: the console built once
 * per run (test/support/build.ts), the service on http://localhost:PORT (a secure context, for
 * passkeys), and every request the pages make recorded, so that a suite can show that none left the
 * service's origin.
 */
export interface ConsoleRig {
  t: TestContext;
  origin: string;
  browser: Browser;
  /** Every URL any page of the rig requested, in order. */
  requests: string[];
  /** A new browser (its own cookies), its requests recorded; closed by `close`. */
  newContext(): Promise<BrowserContext>;
  close(): Promise<void>;
}

export const CONSOLE_TIMEOUT = 120_000;

export async function startConsoleRig(env: Record<string, string> = {}): Promise<ConsoleRig> {
  const [port, folder] = await Promise.all([freePort(), builtConsole()]);
  const origin = `http://localhost:${port}`;
  const t = await startTestApp({ APP_URL: origin, CONSOLE_DIR: folder, ...env }, { port });
  const browser = await launchChromium(CONSOLE_TIMEOUT, ['--host-resolver-rules=MAP localhost 127.0.0.1']);
  const requests: string[] = [];
  const contexts: BrowserContext[] = [];
  return {
    t,
    origin,
    browser,
    requests,
    async newContext() {
      const context = await browser.newContext({ baseURL: origin });
      context.on('request', (request) => requests.push(request.url()));
      contexts.push(context);
      return context;
    },
    async close() {
      for (const context of contexts) await context.close().catch(() => undefined);
      await browser?.close();
      await t?.close();
    },
  };
}

/**
 * Opens the console at `path` and signs in on the hosted page with a password; resolves once the
 * console shows the screen (its heading has focus).
 */
export async function signInToConsole(page: Page, path: string, email: string, password: string): Promise<void> {
  await page.goto(`/console${path}`);
  await page.getByLabel('E-mail address').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL((url) => url.pathname === `/console${path}`);
  await page.locator('#page-title').waitFor();
}

/** axe-core's serious and critical findings on the page as it is now (WCAG 2 A and AA rules). */
export async function seriousViolations(page: Page): Promise<Array<{ id: string; impact: string; targets: string[] }>> {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  return results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => ({
      id: violation.id,
      impact: String(violation.impact),
      targets: violation.nodes.map((node) => node.target.join(' ')),
    }));
}

/** The URLs among `requests` that are not the service's own origin (nor the browser's own data: or blob: URLs). */
export function foreignRequests(requests: string[], origin: string): string[] {
  return requests.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:') && !url.startsWith('blob:'));
}
