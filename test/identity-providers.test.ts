import type { IdentityProviderTable } from '../src/providers/provider-repository.js';
import { unseal } from '../src/infra/sealed.js';
import { providerSealingKey } from '../src/providers/registry.js';
import { startTestApp, TEST_SECRET, type TestContext } from './support/app.js';
import { auditTable } from './support/audit.js';
import { expectError } from './support/expect.js';

// Admins register upstream sign-in providers: presets, the checks of each kind, the client secret
// sealed at rest and never shown again, and the list a sign-in page reads.

let t: TestContext;
let admin: string;

const providerRows = () => t.db.withTables<{ identity_providers: IdentityProviderTable }>();

beforeAll(async () => {
  t = await startTestApp();
  admin = await t.adminToken();
});
afterAll(async () => {
  await t?.close();
});

describe('registering providers', () => {
  it('fills a preset from the slug alone, seals the secret and never shows it', async () => {
    const secret = 'GOCSPX-google-secret-value';
    const res = await t.post(
      '/api/identity-providers',
      { slug: 'google', client_id: 'google-client', client_secret: secret },
      { token: admin },
    );
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      slug: 'google',
      kind: 'oidc',
      name: 'Google',
      client_id: 'google-client',
      has_client_secret: true,
      issuer: 'https://accounts.google.com',
      scopes: ['openid', 'email', 'profile'],
      claims: { subject: 'sub', email: 'email', email_verified: 'email_verified', name: 'name' },
      enabled: true,
      allow_signup: true,
    });
    expect(JSON.stringify(res.body)).not.toContain(secret);

    const row = await providerRows().selectFrom('identity_providers').selectAll().where('slug', '=', 'google').executeTakeFirstOrThrow();
    expect(row.client_secret_sealed).not.toContain(secret);
    expect(unseal(providerSealingKey(TEST_SECRET), row.client_secret_sealed!)).toBe(secret);

    const listed = await t.get('/api/identity-providers', { token: admin });
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body)).not.toContain(secret);
    const audit = await auditTable(t)
      .selectFrom('audit_events')
      .selectAll()
      .where('event_type', '=', 'identity_provider.created')
      .execute();
    expect(audit.map((e) => e.details)).toContainEqual({ provider: 'google', kind: 'oidc' });
    expect(JSON.stringify(audit)).not.toContain(secret);
  });

  it('fills GitHub as a plain OAuth2 provider with its e-mails URL', async () => {
    const res = await t.post('/api/identity-providers', { slug: 'github', client_id: 'gh', client_secret: 'gh-secret' }, { token: admin });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      kind: 'oauth2',
      name: 'GitHub',
      issuer: null,
      authorization_url: 'https://github.com/login/oauth/authorize',
      token_url: 'https://github.com/login/oauth/access_token',
      userinfo_url: 'https://api.github.com/user',
      emails_url: 'https://api.github.com/user/emails',
      scopes: ['read:user', 'user:email'],
      claims: { subject: 'id', email: 'email', email_verified: null, name: 'name' },
    });
  });

  it('registers any OpenID Connect provider by its issuer, asking for openid always, and a public client without a secret', async () => {
    const res = await t.post(
      '/api/identity-providers',
      { slug: 'corp', name: 'Corp SSO', client_id: 'c', issuer: 'http://localhost:9/realm', scopes: ['email'] },
      { token: admin },
    );
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      kind: 'oidc',
      has_client_secret: false,
      scopes: ['openid', 'email'],
      issuer: 'http://localhost:9/realm',
    });
  });

  it('refuses what cannot work: a missing issuer or URL, plain http off loopback, a taken slug', async () => {
    const noIssuer = await t.post('/api/identity-providers', { slug: 'acme', name: 'Acme', client_id: 'c' }, { token: admin });
    expectError(noIssuer, 422, 'VALIDATION_ERROR');
    expect(noIssuer.body.error.details).toEqual([{ field: 'body.issuer', message: 'is required for kind oidc' }]);

    const microsoft = await t.post('/api/identity-providers', { slug: 'microsoft', client_id: 'c' }, { token: admin });
    expectError(microsoft, 422, 'VALIDATION_ERROR');
    expect(microsoft.body.error.details[0].field).toBe('body.issuer');

    const oauth2 = await t.post(
      '/api/identity-providers',
      { slug: 'acme', kind: 'oauth2', name: 'Acme', client_id: 'c', authorization_url: 'https://acme.example/authorize' },
      { token: admin },
    );
    expectError(oauth2, 422, 'VALIDATION_ERROR');
    expect(oauth2.body.error.details.map((d: { field: string }) => d.field)).toEqual(['body.token_url', 'body.userinfo_url']);

    const plain = await t.post(
      '/api/identity-providers',
      { slug: 'acme', name: 'Acme', client_id: 'c', issuer: 'http://idp.example.com' },
      { token: admin },
    );
    expectError(plain, 422, 'VALIDATION_ERROR');
    expect(plain.body.error.details).toEqual([{ field: 'body.issuer', message: 'must be https (http only on a loopback host)' }]);

    const notUrl = await t.post('/api/identity-providers', { slug: 'acme', name: 'Acme', client_id: 'c', issuer: 'x' }, { token: admin });
    expectError(notUrl, 422, 'VALIDATION_ERROR');
    expect(notUrl.body.error.details).toEqual([{ field: 'body.issuer', message: 'must be an absolute URL' }]);

    const slug = await t.post(
      '/api/identity-providers',
      { slug: 'Bad_Slug', name: 'x', client_id: 'c', issuer: 'https://x.example' },
      { token: admin },
    );
    expectError(slug, 422, 'VALIDATION_ERROR');

    const taken = await t.post('/api/identity-providers', { slug: 'google', client_id: 'again' }, { token: admin });
    expectError(taken, 409, 'CONFLICT');
    const rows = await providerRows().selectFrom('identity_providers').select('slug').execute();
    expect(rows.map((r) => r.slug).sort()).toEqual(['corp', 'github', 'google']);
  });

  it('is for admins only', async () => {
    const user = await t.register();
    expectError(await t.get('/api/identity-providers', { token: user.access }), 403, 'FORBIDDEN');
    expectError(await t.post('/api/identity-providers', { slug: 'gitlab', client_id: 'c' }, { token: user.access }), 403, 'FORBIDDEN');
    expectError(await t.put('/api/identity-providers/google', { enabled: false }, { token: user.access }), 403, 'FORBIDDEN');
    expectError(await t.delete('/api/identity-providers/google', { token: user.access }), 403, 'FORBIDDEN');
    expect((await t.get('/api/identity-providers/google')).status).toBe(401);
  });
});

describe('changing and removing providers', () => {
  it('changes fields, replaces or removes the secret, and checks the result as a whole', async () => {
    const changed = await t.put('/api/identity-providers/corp', { client_secret: 'corp-secret', allow_signup: false }, { token: admin });
    expect(changed.status).toBe(200);
    expect(changed.body.data).toMatchObject({ has_client_secret: true, allow_signup: false, name: 'Corp SSO' });
    expect(JSON.stringify(changed.body)).not.toContain('corp-secret');

    const removed = await t.put('/api/identity-providers/corp', { client_secret: null }, { token: admin });
    expect(removed.body.data.has_client_secret).toBe(false);

    expectError(await t.put('/api/identity-providers/corp', { issuer: null }, { token: admin }), 422, 'VALIDATION_ERROR');
    expectError(await t.put('/api/identity-providers/github', { token_url: 'ftp://x.example' }, { token: admin }), 422, 'VALIDATION_ERROR');
    expectError(await t.put('/api/identity-providers/nobody', { enabled: false }, { token: admin }), 404, 'NOT_FOUND');
    const row = await providerRows().selectFrom('identity_providers').selectAll().where('slug', '=', 'corp').executeTakeFirstOrThrow();
    expect(row.issuer).toBe('http://localhost:9/realm');

    const audit = await auditTable(t)
      .selectFrom('audit_events')
      .selectAll()
      .where('event_type', '=', 'identity_provider.updated')
      .orderBy('id')
      .execute();
    expect(audit.map((e) => e.details)).toEqual([
      { provider: 'corp', fields: ['client_secret', 'allow_signup'] },
      { provider: 'corp', fields: ['client_secret'] },
    ]);
  });

  it('shows a sign-in page the enabled providers only, without authentication', async () => {
    expect((await t.put('/api/identity-providers/github', { enabled: false }, { token: admin })).status).toBe(200);
    const res = await t.get('/api/auth/providers');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: [
        { slug: 'corp', name: 'Corp SSO' },
        { slug: 'google', name: 'Google' },
      ],
    });
  });

  it('deletes a provider', async () => {
    expect((await t.delete('/api/identity-providers/github', { token: admin })).status).toBe(204);
    expectError(await t.get('/api/identity-providers/github', { token: admin }), 404, 'NOT_FOUND');
    expectError(await t.delete('/api/identity-providers/github', { token: admin }), 404, 'NOT_FOUND');
  });
});
