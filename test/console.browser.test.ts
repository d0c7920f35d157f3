import { gzipSync } from 'node:zlib';
import { ADMIN, startTestApp, type TestContext } from './support/app.js';
import { describeInBrowser, launchChromium } from './support/browser.js';
import { builtConsole } from './support/build.js';
import {
  CONSOLE_TIMEOUT,
  foreignRequests,
  seriousViolations,
  signInToConsole,
  startConsoleRig,
  type ConsoleRig,
} from './support/console.js';
import { freePort } from './support/net.js';

// The console as a browser gets it: served under its own strict policy, with hashed assets cached for
// a year, signing in through the hosted pages as the built-in first-party client and calling the API
// with the provider's access token, in memory only.

describeInBrowser('the console', () => {
  let rig: ConsoleRig;

  beforeAll(async () => {
    rig = await startConsoleRig();
  }, CONSOLE_TIMEOUT);

  afterAll(() => rig?.close(), CONSOLE_TIMEOUT);

  it('is one page under a policy that allows nothing inline and nothing from elsewhere, its assets cached for a year', async () => {
    // Not the API: the console's addresses are the console's, answered with its page.
    const page = await fetch(`${rig.t.baseUrl}/console/users/42`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const policy = String(page.headers.get('content-security-policy'));
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("style-src 'self'");
    expect(policy).not.toContain('unsafe-inline');
    expect(policy).toContain("connect-src 'self'");
    const html = await page.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=/);
    const assets = [...html.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((match) => match[1]);
    expect(assets.length).toBeGreaterThanOrEqual(2);
    for (const asset of assets) {
      const response = await fetch(`${rig.t.baseUrl}${asset}`);
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      await response.arrayBuffer();
    }
    // The first load's JavaScript, compressed as a server would send it, is well under 250 KB.
    const scripts = [...html.matchAll(/<script[^>]*\bsrc="([^"]+)"/g)].map((match) => match[1]);
    let gzipped = 0;
    for (const script of scripts) gzipped += gzipSync(Buffer.from(await (await fetch(`${rig.t.baseUrl}${script}`)).arrayBuffer())).length;
    expect(scripts.length).toBeGreaterThan(0);
    expect(gzipped).toBeLessThan(250 * 1024);
    expect((await fetch(`${rig.t.baseUrl}/console/assets/missing.js`)).status).toBe(404);
    expect((await fetch(`${rig.t.baseUrl}/console/assets/..%2f..%2fpackage.json`)).status).toBe(404);
  });

  it('signs an admin in through the hosted page and shows the admin screens, with no request leaving the origin', async () => {
    const context = await rig.newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await signInToConsole(page, '/', ADMIN.email, ADMIN.password);
    await expect(page.getByRole('heading', { level: 1 }).textContent()).resolves.toBe('Overview');
    const nav = page.getByRole('navigation', { name: 'Console' });
    for (const name of ['Users', 'Audit log', 'OAuth clients', 'Identity providers', 'Webhooks', 'Organisations', 'Roles', 'Account'])
      await expect(nav.getByRole('link', { name }).count()).resolves.toBe(1);
    // The session the hosted page opened is the one the console acts through: it is the admin's, listed.
    const admin = await rig.t.adminToken();
    const sessions = await rig.t.get('/api/auth/sessions', { token: admin });
    expect(sessions.body.data.length).toBeGreaterThanOrEqual(2);
    await expect(seriousViolations(page)).resolves.toEqual([]);
    expect(foreignRequests(rig.requests, rig.origin)).toEqual([]);
    // Tokens are in memory only: nothing in the page's storage holds one.
    const stored = await page.evaluate(() => {
      const web = globalThis as unknown as { localStorage: { length: number }; sessionStorage: { length: number } };
      return { local: web.localStorage.length, session: web.sessionStorage.length };
    });
    expect(stored).toEqual({ local: 0, session: 0 });
    expect(errors).toEqual([]);
    await context.close();
  });
});

describeInBrowser('the console without the OpenID Connect provider', () => {
  let t: TestContext;

  beforeAll(async () => {
    const port = await freePort();
    t = await startTestApp({ APP_URL: `http://localhost:${port}`, OIDC_ENABLED: 'false', CONSOLE_DIR: await builtConsole() }, { port });
  }, CONSOLE_TIMEOUT);

  afterAll(() => t?.close());

  it('says that it signs in through the provider, and how to turn it on', async () => {
    const browser = await launchChromium(CONSOLE_TIMEOUT, ['--host-resolver-rules=MAP localhost 127.0.0.1']);
    try {
      const page = await browser.newPage();
      await page.goto(`${t.config.account.appUrl}/console/`);
      const alert = page.getByRole('alert');
      await alert.waitFor();
      await expect(alert.textContent()).resolves.toContain('OIDC_ENABLED=true');
    } finally {
      await browser.close();
    }
  });
});
