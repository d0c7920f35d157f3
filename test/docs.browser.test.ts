import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page, Request } from 'playwright-core';
import { ADMIN, startTestApp, type TestContext } from './support/app.js';
import { describeInBrowser, launchChromium } from './support/browser.js';

// Drives the real documentation pages in headless Chromium: Swagger UI's Authorize dialog with the
// OAuth2 password flow, a live "Try it out" call, and the ReDoc page.

const TIMEOUT = 60_000;

describeInBrowser('documentation in a browser', () => {
  let t: TestContext;
  let server: Server;
  let base: string;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    t = await startTestApp();
    server = createServer((req, res) => void t.app.koa.callback()(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium(TIMEOUT);
  }, TIMEOUT);

  afterAll(async () => {
    await browser?.close();
    if (server?.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    await t?.close();
  });

  beforeEach(async () => {
    page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    page.setDefaultTimeout(15_000);
  });

  afterEach(async () => {
    await page?.close();
  });

  /**
   * Records every request the page makes to another origin, one its Content-Security-Policy stops
   * included: the pages must not try to load anything from outside the service. Returns a
   * function that lists them.
   */
  function watchExternalRequests(): () => string[] {
    const external = new Set<Request>();
    page.on('request', (req) => {
      if (!/^(data:|blob:)/.test(req.url()) && new URL(req.url()).origin !== base) external.add(req);
    });
    return () => [...external].map((req) => `${req.url()} (${req.failure()?.errorText ?? 'sent'})`);
  }

  /** Runs one step; on failure saves a screenshot of the page to /tmp and says where. */
  async function step<T>(name: string, action: () => Promise<T>): Promise<T> {
    try {
      return await action();
    } catch (error) {
      const file = `/tmp/docs-browser-${name.replace(/[^\w-]+/g, '-')}.png`;
      let note = `screenshot: ${file}`;
      try {
        await page.screenshot({ path: file });
      } catch (shotError) {
        note = `no screenshot (${(shotError as Error).message})`;
      }
      if (error instanceof Error) error.message = `step "${name}" failed (${note}): ${error.message}`;
      throw error;
    }
  }

  it(
    '/docs: Authorize with the OAuth2 password flow, then GET /api/auth/me with Try it out',
    async () => {
      const pageErrors: string[] = [];
      page.on('pageerror', (error) => pageErrors.push(error.message));
      const external = watchExternalRequests();

      await step('open-docs', async () => {
        await page.goto(`${base}/docs`);
        await page.locator('.swagger-ui .info .title').waitFor();
        await page.locator('#operations-Auth-getMe').waitFor();
      });

      await step('authorize', async () => {
        await page.locator('.scheme-container button.authorize').click();
        const dialog = page.locator('.modal-ux');
        await dialog.waitFor();
        const oauth = dialog.locator('.auth-container').filter({ hasText: 'OAuth2PasswordBearer' });
        await oauth.locator('#oauth_username').fill(ADMIN.email);
        await oauth.locator('#oauth_password').fill(ADMIN.password);
        const [response] = await Promise.all([
          page.waitForResponse((res) => res.url() === `${base}/api/auth/login` && res.request().method() === 'POST'),
          oauth.locator('button.authorize', { hasText: 'Authorize' }).click(),
        ]);
        expect(response.status()).toBe(200);
        // Once authorized, the form gives way to a Logout button.
        await oauth.locator('button.authorize', { hasText: 'Logout' }).waitFor();
        expect(await oauth.locator('.errors').count()).toBe(0);
        await oauth.locator('button.btn-done').click();
        await dialog.waitFor({ state: 'detached' });
      });

      await step('try-get-me', async () => {
        const operation = page.locator('#operations-Auth-getMe');
        await operation.locator('.opblock-summary').first().click();
        await operation.locator('button.try-out__btn').click();
        const [response] = await Promise.all([
          page.waitForResponse((res) => res.url() === `${base}/api/auth/me`),
          operation.locator('button.execute').click(),
        ]);
        expect(response.request().headers()['authorization']).toMatch(/^Bearer \S+$/);
        expect(response.status()).toBe(200);
        const live = operation.locator('.live-responses-table .response').first();
        await live.waitFor();
        await expect(live.locator('.response-col_status').innerText()).resolves.toMatch(/^\s*200\b/);
        // The response body, as Swagger UI shows it, names the admin.
        await live.locator('.response-col_description .microlight', { hasText: ADMIN.email }).waitFor();
      });

      expect(pageErrors).toEqual([]);
      expect(external()).toEqual([]);
    },
    TIMEOUT,
  );

  it(
    '/redoc: shows the Auth, Users and Health tags',
    async () => {
      const pageErrors: string[] = [];
      page.on('pageerror', (error) => pageErrors.push(error.message));
      const external = watchExternalRequests();

      await step('open-redoc', async () => {
        await page.goto(`${base}/redoc`);
        // ReDoc lays the whole contract out before it shows its menu: a few seconds alone, several
        // times that on a machine busy with the rest of the suite.
        await page.locator('.menu-content').waitFor({ timeout: 50_000 });
      });

      await step('redoc-tags', async () => {
        for (const tag of ['Auth', 'Users', 'Health']) {
          const menuItem = page.locator(`.menu-content [data-item-id="tag/${tag}"]`);
          await menuItem.first().waitFor();
          await expect(menuItem.first().innerText()).resolves.toContain(tag);
          await expect(page.locator(`.api-content [id="tag/${tag}"]`).count()).resolves.toBe(1);
        }
      });

      expect(pageErrors).toEqual([]);
      expect(external()).toEqual([]);
    },
    TIMEOUT,
  );
});
