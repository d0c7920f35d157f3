import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createAccountClient, type components } from '../src/client.js';
import { startTestApp, uniqueEmail, type TestContext } from './support/app.js';
import { builtSources } from './support/build.js';

// The typed client of src/client.ts, used as a consumer of the package would: a whole account's
// life through it, the error envelope it hands back, and the package export it is published under.

type ErrorCode = components['schemas']['ErrorCode'];

let app: TestContext;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

describe('createAccountClient', () => {
  it('carries an account from registration to restore', async () => {
    const email = uniqueEmail('client-flow');
    const registered = await app.client.POST('/api/auth/register', {
      body: { email: ` ${email.toUpperCase()} `, password: 'password-123', name: 'Client Flow' },
    });
    expect(registered.response.status).toBe(201);
    const userId = registered.data!.data.user.id;
    expect(registered.data!.data).toMatchObject({
      user: { email, name: 'Client Flow', role: 'user' },
      token_type: 'bearer',
      expires_in: 1800,
    });

    // The form login. openapi-fetch serializes form bodies by itself when given the content type,
    // but its check (`headers.get instanceof Function`) fails across Jest's module realm.
    const form = await app.client.POST('/api/auth/login', {
      body: { username: email, password: 'password-123' },
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      bodySerializer: (body) => new URLSearchParams(body).toString(),
    });
    expect(form.response.status).toBe(200);
    expect(form.data!.access_token).toBe(form.data!.data.access_token);

    const login = await app.client.POST('/api/auth/login/json', { body: { email, password: 'password-123' } });
    expect(login.data!.data.user.id).toBe(userId);

    // The token follows whatever the function returns, so a refresh needs no new client.
    let token = login.data!.data.access_token;
    const user = app.clientFor(() => token);
    expect((await user.GET('/api/auth/me')).data!.data).toMatchObject({ id: userId, email });

    const refreshed = await app.client.POST('/api/auth/refresh', { body: { refresh_token: login.data!.data.refresh_token } });
    expect(refreshed.response.status).toBe(200);
    token = refreshed.data!.data.access_token;
    expect((await user.GET('/api/auth/me')).data!.data.id).toBe(userId);

    const updated = await user.PUT('/api/users/{id}', { params: { path: { id: userId } }, body: { name: 'Renamed by Client' } });
    expect(updated.data!.data).toMatchObject({ id: userId, name: 'Renamed by Client' });

    const admin = app.clientFor(await app.adminToken());
    const page = await admin.GET('/api/users', {
      params: { query: { q: 'client-flow', sort: 'email', order: 'asc', per_page: 5, page: 1 } },
    });
    expect(page.response.status).toBe(200);
    expect(page.data!.data.map((u) => u.id)).toEqual([userId]);
    expect(page.data!.meta).toEqual({ page: 1, per_page: 5, total: 1, pages: 1, has_next: false, has_prev: false });

    const deleted = await user.DELETE('/api/users/{id}', { params: { path: { id: userId } } });
    expect(deleted.response.status).toBe(204);
    expect(deleted.data).toBeUndefined();
    expect(deleted.error).toBeUndefined();
    expect((await user.GET('/api/auth/me')).response.status).toBe(401);

    const listedDeleted = await admin.GET('/api/users', { params: { query: { status: 'deleted', q: 'client-flow', limit: 10 } } });
    expect(listedDeleted.data!.data.map((u) => u.id)).toEqual([userId]);
    expect(listedDeleted.data!.meta).toEqual({ next_cursor: null, has_more: false });

    const restored = await admin.POST('/api/users/{id}/restore', { params: { path: { id: userId } } });
    expect(restored.data!.data).toMatchObject({ id: userId, deleted_at: null, name: 'Renamed by Client' });
    const again = await app.client.POST('/api/auth/login/json', { body: { email, password: 'password-123' } });
    expect(again.response.status).toBe(200);
  });

  it('hands back the error envelope, typed, with no data', async () => {
    const user = await app.register();
    const client = app.clientFor(user.access);

    const forbidden = await client.GET('/api/users');
    expect(forbidden.data).toBeUndefined();
    expect(forbidden.response.status).toBe(403);
    const code: ErrorCode | undefined = forbidden.error?.error.code;
    expect(code).toBe('FORBIDDEN');

    const admin = app.clientFor(await app.adminToken());
    const invalid = await admin.GET('/api/users', { params: { query: { per_page: 1000 } } });
    expect(invalid.response.status).toBe(422);
    expect(invalid.error).toEqual({
      success: false,
      error: { code: 'VALIDATION_ERROR', message: expect.any(String), details: [{ field: 'query.per_page', message: expect.any(String) }] },
    });

    const missing = await admin.GET('/api/users/{id}', { params: { path: { id: 2147483647 } } });
    expect(missing.error?.error).toMatchObject({ code: 'NOT_FOUND' });

    const anonymous = await app.client.GET('/api/auth/me');
    expect(anonymous.error?.error.code).toBe('UNAUTHORIZED');
    expect(anonymous.response.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('sends the bearer token unless a request sets its own Authorization', async () => {
    const [alice, bob] = [await app.register(), await app.register()];
    const client = app.clientFor(alice.access);
    expect((await client.GET('/api/auth/me')).data!.data.id).toBe(alice.id);
    const asBob = await client.GET('/api/auth/me', { headers: { Authorization: `Bearer ${bob.access}` } });
    expect(asBob.data!.data.id).toBe(bob.id);
    // A function that has no token yet sends none.
    const empty = app.clientFor(() => undefined);
    expect((await empty.GET('/api/auth/me')).response.status).toBe(401);
  });

  it('uses the fetch it is given', async () => {
    const seen: string[] = [];
    const client = createAccountClient({
      baseUrl: 'http://accounts.invalid',
      token: 'a-token',
      fetch: (request) => {
        seen.push(`${request.method} ${request.url} ${request.headers.get('authorization')}`);
        return Promise.resolve(Response.json({ success: true, data: { status: 'alive' } }));
      },
    });
    const { data } = await client.GET('/health/live');
    expect(data).toEqual({ success: true, data: { status: 'alive' } });
    expect(seen).toEqual(['GET http://accounts.invalid/health/live Bearer a-token']);
  });
});

// The build is the same whatever the database: it is checked once, in the embedded half of the suite.
const builtOnce = process.env.TEST_DATABASE_KIND === 'postgres' ? describe.skip : describe;

builtOnce('the package export', () => {
  // Puts the build (tsconfig.build.json, made once for the suite) into a copy of the package, then resolves `account-service/client`
  // by name, as a consumer does: the compiled module in Node, its types in tsc.
  it('resolves account-service/client to the built client, with its types', async () => {
    const root = join(import.meta.dirname, '..');
    const pkg = mkdtempSync(join(tmpdir(), 'account-service-package-'));
    try {
      const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
      cpSync(await builtSources(), join(pkg, 'dist'), { recursive: true });
      copyFileSync(join(root, 'package.json'), join(pkg, 'package.json'));
      symlinkSync(join(root, 'node_modules'), join(pkg, 'node_modules'), 'dir');

      const script =
        "const { createAccountClient } = require('account-service/client'); process.stdout.write(typeof createAccountClient({ baseUrl: 'http://x' }).GET);";
      expect(execFileSync(process.execPath, ['-e', script], { cwd: pkg }).toString()).toBe('function');
      // The package is ES modules: an ES-module consumer imports it with a plain import.
      const esm = "import { createAccountClient } from 'account-service/client'; process.stdout.write(typeof createAccountClient);";
      expect(execFileSync(process.execPath, ['--input-type=module', '-e', esm], { cwd: pkg }).toString()).toBe('function');

      writeFileSync(
        join(pkg, 'consumer.ts'),
        [
          "import { createAccountClient, type components } from 'account-service/client';",
          "const client = createAccountClient({ baseUrl: 'http://x', token: 't' });",
          "export const me = client.GET('/api/auth/me');",
          "export const role: components['schemas']['Role'] = 'admin';",
          '// @ts-expect-error: not a path of the contract',
          "export const nowhere = client.GET('/api/nowhere');",
        ].join('\n'),
      );
      const check = [
        '--noEmit',
        '--strict',
        '--module',
        'node16',
        '--moduleResolution',
        'node16',
        '--skipLibCheck',
        '--types',
        'node',
        'consumer.ts',
      ];
      execFileSync(process.execPath, [tsc, ...check], { cwd: pkg, stdio: 'pipe' });
    } finally {
      rmSync(pkg, { recursive: true, force: true });
    }
  }, 120_000);
});
