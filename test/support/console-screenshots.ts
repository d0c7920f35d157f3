import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { ADMIN } from './app.js';
import { signInToConsole, startConsoleRig } from './console.js';

// The console's screenshots in docs/images (docs/console.md), light and dark, made from a service
// started with a few users, an application, a webhook and an organisation:
//   make console-screenshots

process.env.TEST_DATABASE_KIND ??= 'embedded';
const IMAGES = join(import.meta.dirname, '..', '..', 'docs', 'images');

const rig = await startConsoleRig();
try {
  const { t } = rig;
  const admin = await t.adminToken();
  const people = [
    ['ada@example.com', 'Ada Lovelace'],
    ['grace@example.com', 'Grace Hopper'],
    ['alan@example.com', 'Alan Turing'],
    ['edsger@example.com', 'Edsger Dijkstra'],
    ['barbara@example.com', 'Barbara Liskov'],
  ];
  for (const [email, name] of people) await t.register({ email, name, password: 'a-long-password-1' });
  await t.post('/api/auth/login', { username: 'grace@example.com', password: 'wrong-password' }, { form: true });
  await t.post(
    '/api/oauth/clients',
    { name: 'Notes', type: 'confidential', redirect_uris: ['https://notes.example.com/callback'] },
    { token: admin },
  );
  await t.post('/api/organizations', { name: 'Acme', slug: 'acme' }, { token: admin });

  for (const scheme of ['light', 'dark'] as const) {
    const context = await rig.browser.newContext({ baseURL: rig.origin, colorScheme: scheme, viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await signInToConsole(page, '/', ADMIN.email, ADMIN.password);
    await shoot(page, '/', `console-overview-${scheme}.png`);
    await shoot(page, '/users', `console-users-${scheme}.png`);
    await shoot(page, '/account', `console-account-${scheme}.png`);
    await context.close();
  }
  const phone = await rig.browser.newContext({
    baseURL: rig.origin,
    viewport: { width: 390, height: 844 },
    isMobile: true,
    hasTouch: true,
  });
  const page = await phone.newPage();
  await signInToConsole(page, '/', ADMIN.email, ADMIN.password);
  await shoot(page, '/users', 'console-users-phone.png');
  await phone.close();
} finally {
  await rig.close();
}

async function shoot(page: Page, path: string, file: string): Promise<void> {
  await page.goto(`/console${path}`);
  await page.locator('#page-title').waitFor();
  // The screen has loaded when nothing on it says it is still loading.
  await page.locator('.busy').first().waitFor({ state: 'detached', timeout: 15_000 });
  await page.screenshot({ path: join(IMAGES, file) });
  console.log(`docs/images/${file}`);
}
