import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestApp, type TestContext } from './support/app.js';
import { describeInBrowser, launchChromium } from './support/browser.js';
import { startExpressRelyingParty } from './support/express-relying-party.js';
import { freePort } from './support/net.js';

// Relying-party libraries nobody here wrote, in headless Chromium against the hosted pages, each on
// an origin of its own: express-openid-connect (Auth0's, a server-side application answered with
// response_mode=form_post, verifying RS256 ID tokens while the service signs its own with ES256), and
// oidc-client-ts in a single-page application signing in through a popup.

const TIMEOUT = 90_000;
const OIDC_CLIENT_TS = readFileSync(
  join(import.meta.dirname, '..', 'node_modules', 'oidc-client-ts', 'dist', 'browser', 'oidc-client-ts.min.js'),
);

function serve(port: number, handler: RequestListener): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    const listening = createServer(handler);
    listening.once('error', reject);
    listening.listen(port, '127.0.0.1', () => resolve(listening));
  });
}

async function stop(server: Server | undefined): Promise<void> {
  if (!server?.listening) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/**
 * The single-page application: oidc-client-ts, and the page the popup comes back to. The sign-in
 * aborts when the opener loses sight of its popup (`popupAbortOnClose`), as it does when a page on
 * the way puts the popup in a browsing context group of its own.
 */
function singlePageApplication(settings: Record<string, string>): RequestListener {
  const page = (script: string) =>
    `<!doctype html><html><head><meta charset="utf-8"><title>App</title><script src="/oidc-client-ts.js"></script></head><body><script>
const settings = ${JSON.stringify(settings)};
${script}
</script></body></html>`;
  return (req, res) => {
    const path = new URL(req.url ?? '/', 'http://app').pathname;
    if (path === '/oidc-client-ts.js') return void res.writeHead(200, { 'Content-Type': 'text/javascript' }).end(OIDC_CLIENT_TS);
    if (path === '/popup-callback')
      return void res.writeHead(200, { 'Content-Type': 'text/html' }).end(page('new oidc.UserManager(settings).signinPopupCallback();'));
    res.writeHead(200, { 'Content-Type': 'text/html' }).end(
      page(`window.signIn = () => new oidc.UserManager(settings).signinPopup({ popupAbortOnClose: true }).then(
  (user) => ({ sub: user.profile.sub, email: user.profile.email }),
  (error) => ({ error: String(error && error.message || error) }),
);`),
    );
  };
}

describeInBrowser('relying-party libraries in a browser', () => {
  let t: TestContext;
  let origin: string;
  let browser: Browser;
  const servers: Server[] = [];
  const closing: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    const port = await freePort();
    // localhost for every origin: the provider's cookies and the applications' are then all in a secure context.
    origin = `http://localhost:${port}`;
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    t = await startTestApp(
      { APP_URL: origin, ALGORITHM: 'ES256', JWT_PRIVATE_KEY: ec.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
      { port },
    );
    browser = await launchChromium(TIMEOUT, ['--host-resolver-rules=MAP localhost 127.0.0.1']);
  }, TIMEOUT);

  afterAll(async () => {
    await browser?.close();
    for (const server of servers) await stop(server);
    for (const close of closing) await close();
    await t?.close();
  });

  async function client(body: Record<string, unknown>): Promise<{ client_id: string; client_secret?: string }> {
    const res = await t.post('/api/oauth/clients', { first_party: true, ...body }, { token: await t.adminToken() });
    expect(res.status).toBe(201);
    return res.body.data;
  }

  /** A fresh browser context, with every Content-Security-Policy complaint of its pages kept. */
  async function open(): Promise<{ context: BrowserContext; page: Page; complaints: string[] }> {
    const context = await browser.newContext();
    const complaints: string[] = [];
    context.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) complaints.push(message.text());
    });
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    return { context, page, complaints };
  }

  async function signInOnHostedPage(page: Page, email: string, password: string): Promise<void> {
    await page.waitForSelector('h1:text("Sign in")');
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  }

  it(
    'signs in to express-openid-connect with response_mode=form_post: the post reaches the application, whose RS256 check passes and whose user has an address and a name',
    async () => {
      const port = await freePort();
      const appOrigin = `http://localhost:${port}`;
      const registered = await client({ name: 'Intranet', type: 'confidential', redirect_uris: [`${appOrigin}/callback`] });
      const application = await startExpressRelyingParty(port, {
        issuerBaseURL: origin,
        baseURL: appOrigin,
        clientID: registered.client_id,
        clientSecret: registered.client_secret,
        secret: randomBytes(32).toString('base64url'),
        authRequired: false,
        // Code flow (the service has no implicit flow), answered by form_post, as ASP.NET Core's default is.
        authorizationParams: { response_type: 'code', response_mode: 'form_post', scope: 'openid profile email' },
      });
      closing.push(() => application.close());
      const who = await t.register({ name: 'Dorothy Vaughan' });
      const { context, page, complaints } = await open();
      const formPostPolicies: string[] = [];
      page.on('response', (response) => {
        if (response.url().startsWith(`${origin}/oauth2/authorize/`)) formPostPolicies.push(response.headers()['content-security-policy']);
      });
      try {
        await page.goto(`${appOrigin}/login`);
        await signInOnHostedPage(page, who.email, who.password);
        await page.waitForURL(`${appOrigin}/`);
        const seen = JSON.parse((await page.textContent('body')) ?? '{}') as { user: Record<string, unknown>; alg: string };
        expect(seen.alg).toBe('RS256');
        expect(seen.user).toMatchObject({ sub: String(who.id), email: who.email, email_verified: false, name: 'Dorothy Vaughan' });
        // The page that posts the code may post there, and nowhere else.
        expect(formPostPolicies).toHaveLength(1);
        expect(formPostPolicies[0].split(';').filter((directive) => directive.trim().startsWith('form-action'))).toEqual([
          `form-action ${appOrigin}`,
        ]);
        expect(complaints).toEqual([]);
      } finally {
        await context.close();
      }
    },
    TIMEOUT,
  );

  it(
    'signs in to a single-page application through an oidc-client-ts popup opened from another origin',
    async () => {
      const appOrigin = `http://localhost:${await freePort()}`;
      const registered = await client({ name: 'Dashboard', type: 'public', redirect_uris: [`${appOrigin}/popup-callback`] });
      servers.push(
        await serve(
          Number(new URL(appOrigin).port),
          singlePageApplication({
            authority: origin,
            client_id: registered.client_id,
            redirect_uri: `${appOrigin}/popup-callback`,
            scope: 'openid email',
          }),
        ),
      );
      const who = await t.register();
      const { context, page, complaints } = await open();
      try {
        await page.goto(`${appOrigin}/`);
        const opened = context.waitForEvent('page');
        const signedIn = page.evaluate<Record<string, unknown>>('window.signIn()');
        const popup = await opened;
        const closed = popup.waitForEvent('close');
        await signInOnHostedPage(popup, who.email, who.password);
        const result = await signedIn;
        expect(result).toEqual({ sub: String(who.id), email: who.email });
        // The callback page told its opener, and oidc-client-ts closed the popup.
        await closed;
        expect(complaints).toEqual([]);
      } finally {
        await context.close();
      }
    },
    TIMEOUT,
  );
});
