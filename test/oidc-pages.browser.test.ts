import { mkdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { startTestApp, type TestContext } from './support/app.js';
import { addVirtualAuthenticator, describeInBrowser, launchChromium } from './support/browser.js';
import { freePort } from './support/net.js';
import { seedOauthClient } from './support/oauth-clients.js';

// The hosted sign-in pages in headless Chromium: a person signs in on them and openid-client, the
// relying party, completes the code exchange; a passkey (a virtual authenticator of the DevTools
// protocol) signs in alone and as a second step. Every request a page makes is watched, and each page
// passes an accessibility check. With WRITE_SCREENSHOTS=1 the sign-in page is photographed for the docs.

type OpenIdClient = typeof import('openid-client');

const TIMEOUT = 90_000;
const BRAND = 'Example Accounts';
const SCREENSHOTS = join(import.meta.dirname, '..', 'docs', 'images');

/** Registers a passkey for the user through the API, from a page of the service's origin (the ceremony needs one). */
const PASSKEY_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>Passkey</title></head><body>
<script>
async function registerPasskey(token) {
  const headers = { 'Content-Type': 'application/json', Authorization: 'Bearer ' + token };
  const options = (await (await fetch('/api/auth/passkeys/registration/options', { method: 'POST', headers })).json()).data;
  const credential = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options) });
  const res = await fetch('/api/auth/passkeys/registration', { method: 'POST', headers, body: JSON.stringify({ credential: credential.toJSON(), name: 'Laptop' }) });
  return res.status;
}
</script></body></html>`;

/** The page's fields without a label, elements with a positive tabindex, and how many controls Tab should reach. */
const AUDIT = `(() => {
  const visible = (el) => { const box = el.getBoundingClientRect(); return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== 'hidden'; };
  const unlabelled = [...document.querySelectorAll('input, select, textarea')]
    .filter((el) => el.type !== 'hidden' && visible(el))
    .filter((el) => !((el.labels && el.labels.length) || el.getAttribute('aria-label')))
    .map((el) => el.outerHTML);
  const positive = [...document.querySelectorAll('[tabindex]')].filter((el) => Number(el.getAttribute('tabindex')) > 0).map((el) => el.outerHTML);
  const focusable = [...document.querySelectorAll('a[href], button, input, select, textarea')]
    .filter((el) => el.type !== 'hidden' && !el.disabled && visible(el));
  return { unlabelled, positive, count: focusable.length, lang: document.documentElement.lang, title: document.title };
})()`;

/** Where the focus is: the element, and its place on the page. */
const FOCUSED = `(() => {
  const el = document.activeElement;
  const box = el.getBoundingClientRect();
  return { html: el.outerHTML.slice(0, 80), top: Math.round(box.top + window.scrollY), left: Math.round(box.left) };
})()`;

describeInBrowser('hosted sign-in pages in a browser', () => {
  let t: TestContext;
  let oidc: OpenIdClient;
  let server: Server;
  let application: Server;
  let origin: string;
  /** The relying party's origin: where the flow ends, the one address outside the service a page may lead to. */
  let appOrigin: string;
  let browser: Browser;
  let clientId: string;
  let clientSecret: string;

  beforeAll(async () => {
    oidc = await import('openid-client');
    const [port, appPort] = [await freePort(), await freePort()];
    // localhost: the one host a browser allows passkeys on without TLS.
    origin = `http://localhost:${port}`;
    appOrigin = `http://localhost:${appPort}`;
    t = await startTestApp({ APP_URL: origin, BRAND_NAME: BRAND });
    const serve = (listenPort: number, handler: Parameters<typeof createServer>[1]) =>
      new Promise<Server>((resolve, reject) => {
        const listening = createServer(handler);
        listening.once('error', reject);
        listening.listen(listenPort, '127.0.0.1', () => resolve(listening));
      });
    const api = t.app.koa.callback();
    server = await serve(port, (req, res) => {
      if (req.url === '/test/passkey') return void res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(PASSKEY_PAGE);
      void api(req, res);
    });
    application = await serve(appPort, (_req, res) => void res.writeHead(200, { 'Content-Type': 'text/plain' }).end('signed in'));
    const created = await t.post(
      '/api/oauth/clients',
      {
        name: 'Reports',
        type: 'confidential',
        redirect_uris: [`${appOrigin}/callback`],
        post_logout_redirect_uris: [`${appOrigin}/signed-out`],
        scopes: ['openid', 'profile', 'email'],
      },
      { token: await t.adminToken() },
    );
    expect(created.status).toBe(201);
    ({ client_id: clientId, client_secret: clientSecret } = created.body.data);
    browser = await launchChromium(TIMEOUT, ['--host-resolver-rules=MAP localhost 127.0.0.1']);
  }, TIMEOUT);

  afterAll(async () => {
    await browser?.close();
    for (const listening of [server, application]) {
      if (listening?.listening) {
        listening.closeAllConnections();
        await new Promise<void>((resolve) => listening.close(() => resolve()));
      }
    }
    await t?.close();
  });

  interface Session {
    context: BrowserContext;
    page: Page;
    /** Requests that left the service's origin (the application's callback aside), and policy violations. */
    problems: string[];
  }

  /** A fresh browser context watching every request and every Content-Security-Policy report. */
  async function open(viewport = { width: 1280, height: 900 }): Promise<Session> {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    const problems: string[] = [];
    page.on('request', (request) => {
      const url = new URL(request.url());
      const end = url.origin === appOrigin && url.pathname === '/callback';
      if (url.origin !== origin && !end) problems.push(`request to ${request.url()}`);
    });
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(`console: ${message.text()}`);
    });
    return { context, page, problems };
  }

  /** The authorization request of the relying party, and the exchange of the code it gets back. */
  async function relyingParty() {
    const config = await oidc.discovery(new URL(origin), clientId, undefined, oidc.ClientSecretBasic(clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    const verifier = oidc.randomPKCECodeVerifier();
    const [state, nonce] = [oidc.randomState(), oidc.randomNonce()];
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: `${appOrigin}/callback`,
      scope: 'openid profile email',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    return {
      url: url.href,
      endSession: (idToken: string) => oidc.buildEndSessionUrl(config, { id_token_hint: idToken }).href,
      exchange: (callback: string) =>
        oidc.authorizationCodeGrant(config, new URL(callback), { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce }),
    };
  }

  /** Allows access on the consent page, and has the relying party exchange the code the browser comes back with. */
  async function allow(page: Page, rp: Awaited<ReturnType<typeof relyingParty>>) {
    await page.waitForSelector('h1:text("Allow access")');
    await Promise.all([page.waitForURL(`${appOrigin}/callback?**`), page.getByRole('button', { name: 'Allow' }).click()]);
    return rp.exchange(page.url());
  }

  /**
   * Labels, tab order and tabindex: every visible field has a label naming it, no element has a
   * positive tabindex, and Tab from the top visits the controls in the order they appear on screen.
   */
  async function checkAccessibility(page: Page, name: string): Promise<void> {
    const report = await page.evaluate<{ unlabelled: string[]; positive: string[]; count: number; lang: string; title: string }>(AUDIT);
    expect({ name, unlabelled: report.unlabelled, positive: report.positive }).toEqual({ name, unlabelled: [], positive: [] });
    expect(report.lang).toBe('en');
    expect(report.title).toContain(BRAND);
    // Tab through the page: each stop must be below, or on the same line and right of, the one before.
    await page.evaluate('document.activeElement && document.activeElement.blur()');
    const stops: Array<{ html: string; top: number; left: number }> = [];
    for (let i = 0; i < report.count; i++) {
      await page.keyboard.press('Tab');
      stops.push(await page.evaluate<{ html: string; top: number; left: number }>(FOCUSED));
    }
    expect(new Set(stops.map((s) => s.html)).size).toBe(report.count);
    for (let i = 1; i < stops.length; i++) {
      const [before, now] = [stops[i - 1], stops[i]];
      const inOrder = now.top > before.top + 2 || (Math.abs(now.top - before.top) <= 2 && now.left > before.left);
      if (!inOrder) throw new Error(`${name}: Tab goes from ${before.html} to ${now.html}, against the visual order`);
    }
  }

  it(
    'signs a person in end to end, with consent, and the relying party completes the exchange',
    async () => {
      const user = await t.register({ name: 'Ada Lovelace' });
      const rp = await relyingParty();
      const { context, page, problems } = await open();
      try {
        await page.goto(rp.url);
        await page.waitForSelector('h1:text("Sign in")');
        await checkAccessibility(page, 'sign-in');
        await page.getByLabel('E-mail address').fill(user.email);
        await page.getByLabel('Password').fill('wrong-password-1');
        await page.keyboard.press('Enter');
        await page.waitForSelector('[role=alert]:text("is not right")');
        await page.getByLabel('Password').fill(user.password);
        await page.getByRole('button', { name: 'Sign in', exact: true }).click();
        await page.waitForSelector('h1:text("Allow access")');
        await checkAccessibility(page, 'consent');
        const tokens = await allow(page, rp);
        expect(tokens.claims()).toMatchObject({ sub: String(user.id), amr: ['pwd'] });

        // Signing out at the provider: a question, then the page that says it is done.
        await page.goto(rp.endSession(tokens.id_token!));
        await page.waitForSelector('h1:text("Sign out")');
        await checkAccessibility(page, 'sign-out');
        await page.getByRole('button', { name: 'Yes, sign me out' }).click();
        await page.waitForSelector('h1:text("Signed out")');
        await checkAccessibility(page, 'signed out');
        expect(problems).toEqual([]);
      } finally {
        await context.close();
      }
    },
    TIMEOUT,
  );

  it(
    'reaches the application’s post-logout address when the provider session is already gone, at once for an admin’s client and after a click for one that registered itself',
    async () => {
      const { context, page, problems } = await open();
      const endSession = (client: string, back?: string) =>
        `${origin}/oauth2/end_session?${new URLSearchParams({ client_id: client, ...(back ? { post_logout_redirect_uri: back } : {}) }).toString()}`;
      try {
        // No session in this browser: the provider's page posts its confirmation by itself, and its redirect leaves the service.
        await page.goto(endSession(clientId, `${appOrigin}/signed-out`));
        await page.waitForURL(`${appOrigin}/signed-out`);
        expect(await page.textContent('body')).toBe('signed in');

        // Without an address to go back to: the page that says it is done.
        await page.goto(endSession(clientId));
        await page.waitForSelector('h1:text("Signed out")');

        // A client that registered itself: the person is asked first, and goes on only by pressing the button.
        const registered = await seedOauthClient(t, {
          name: 'Connector',
          type: 'public',
          redirect_uris: [`${appOrigin}/callback`],
          post_logout_redirect_uris: [`${appOrigin}/bye`],
          registered: true,
        });
        await page.goto(endSession(registered.id, `${appOrigin}/bye`));
        await page.waitForSelector('h1:text("Signed out")');
        expect(new URL(page.url()).origin).toBe(origin);
        await checkAccessibility(page, 'signed out, going back');
        await Promise.all([page.waitForURL(`${appOrigin}/bye`), page.getByRole('button', { name: /^Continue to / }).click()]);
        expect(problems.filter((problem) => problem.startsWith('console:'))).toEqual([]);
      } finally {
        await context.close();
      }
    },
    TIMEOUT,
  );

  it(
    'signs in with a passkey alone and as the second step after a password',
    async () => {
      const user = await t.register();
      const { context, page, problems } = await open();
      try {
        const cdp: CDPSession = await context.newCDPSession(page);
        await addVirtualAuthenticator(cdp);
        await page.goto(`${origin}/test/passkey`);
        expect(await page.evaluate(`registerPasskey(${JSON.stringify(user.access)})`)).toBe(201);
        problems.length = 0;

        // Alone: the passkey button of the sign-in page.
        let rp = await relyingParty();
        await page.goto(rp.url);
        await page.waitForSelector('h1:text("Sign in")');
        await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
        expect((await allow(page, rp)).claims()).toMatchObject({ sub: String(user.id), amr: ['hwk', 'mfa'] });

        // After a password: the second step, in a browser with no provider session yet.
        await context.clearCookies();
        rp = await relyingParty();
        await page.goto(rp.url);
        await page.getByLabel('E-mail address').fill(user.email);
        await page.getByLabel('Password').fill(user.password);
        await page.getByRole('button', { name: 'Sign in', exact: true }).click();
        await page.waitForSelector('h1:text("Second step")');
        await checkAccessibility(page, 'second step');
        await page.getByRole('button', { name: 'Use your passkey' }).click();
        expect((await allow(page, rp)).claims()).toMatchObject({ sub: String(user.id), amr: ['pwd', 'hwk', 'mfa'] });
        expect(problems).toEqual([]);
      } finally {
        await context.close();
      }
    },
    TIMEOUT,
  );

  it(
    'passes the accessibility check on the password reset, e-mailed code and error pages, and is photographed at phone and desktop width',
    async () => {
      const rp = await relyingParty();
      const { context, page, problems } = await open();
      try {
        await page.goto(rp.url);
        await page.getByRole('link', { name: 'Forgot your password?' }).click();
        await page.waitForSelector('h1:text("Reset your password")');
        await checkAccessibility(page, 'reset');
        await page.getByRole('link', { name: 'Back to signing in' }).click();
        await page.getByRole('link', { name: 'Sign in with a code sent by e-mail' }).click();
        await page.waitForSelector('h1:text("Sign in with a code")');
        await checkAccessibility(page, 'e-mail code');
        await page.getByLabel('E-mail address').fill('someone@example.com');
        await page.getByRole('button', { name: 'Send the code' }).click();
        await page.waitForSelector('h1:text("Enter the code")');
        await checkAccessibility(page, 'e-mail code entry');
        await page.goto(`${origin}/oauth2/interaction/unknown`);
        await checkAccessibility(page, 'expired');
        expect(problems).toEqual([]);
      } finally {
        await context.close();
      }
      if (process.env.WRITE_SCREENSHOTS !== '1') return;
      await mkdir(SCREENSHOTS, { recursive: true });
      for (const [name, viewport] of [
        ['phone', { width: 390, height: 844 }],
        ['desktop', { width: 1280, height: 800 }],
      ] as const) {
        const shot = await open(viewport);
        await shot.page.goto((await relyingParty()).url);
        await shot.page.waitForSelector('h1:text("Sign in")');
        await shot.page.screenshot({ path: join(SCREENSHOTS, `sign-in-${name}.png`), fullPage: true });
        await shot.context.close();
      }
    },
    TIMEOUT,
  );
});
