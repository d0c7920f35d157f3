import { ADMIN, startTestApp, type RegisteredUser, type TestContext } from './support/app.js';
import { auditTable } from './support/audit.js';
import { expectError } from './support/expect.js';
import { FormBrowser, formTo } from './support/hosted-pages.js';
import { claimsOf } from './support/jwt.js';
import { freePort } from './support/net.js';
import { seedOauthClient } from './support/oauth-clients.js';
import { addMember, verifiedUser } from './support/organizations.js';
import {
  authorizationRequest,
  oauthError,
  REDIRECT,
  relyingParty,
  relyingPartyLibraries,
  type Application,
  type Configuration,
  type Jose,
  type OpenIdClient,
} from './support/relying-party.js';

// APIs (resource servers, RFC 8707) of the OpenID Connect provider: admins manage them; an application
// that names one with `resource` gets a JWT access token for it (RFC 9068), which the API verifies
// offline with jose against the service's JWK Set, and which is no other kind of token.

const INVOICES = 'https://invoices.example.test/api';
const INVOICE_SCOPES = ['invoices:read', 'invoices:write', 'invoices:approve'];

let t: TestContext;
let oidc: OpenIdClient;
let jose: Jose;
let admin: string;
let app: Application;
let config: Configuration;

beforeAll(async () => {
  ({ oidc, jose } = await relyingPartyLibraries());
  const port = await freePort();
  t = await startTestApp({ APP_URL: `http://127.0.0.1:${port}` }, { port });
  admin = await t.adminToken();
  app = await seedOauthClient(t, { name: 'Billing', type: 'confidential', redirect_uris: [REDIRECT], first_party: true });
  config = await relyingParty(oidc, t, app);
  const res = await t.post('/api/oauth/resources', { indicator: INVOICES, name: 'Invoices', scopes: INVOICE_SCOPES }, { token: admin });
  expect(res.status).toBe(201);
});
afterAll(() => t?.close());

const jwks = () => jose.createRemoteJWKSet(new URL(`${t.baseUrl}/.well-known/jwks.json`));

/** The person signs in on the hosted page; the application's code exchange, with its extra parameters. */
async function signIn(who: RegisteredUser, params: Record<string, string>) {
  const browser = new FormBrowser(t.baseUrl);
  const { url, exchange } = await authorizationRequest(oidc, config, { prompt: 'consent', ...params });
  const page = await browser.open(url.href);
  const landed = await browser.submit(formTo(page, '/login'), { email: who.email, password: who.password });
  return { landed, exchange: (tokenParams?: Record<string, string>) => exchange(landed, tokenParams) };
}

describe('admins manage the APIs', () => {
  it('create, list, read, change and delete one, each recorded in the audit trail', async () => {
    const created = await t.post(
      '/api/oauth/resources',
      { indicator: 'urn:example:reports', name: 'Reports', scopes: ['reports:read'] },
      { token: admin },
    );
    expect(created.status).toBe(201);
    const resource = created.body.data;
    expect(resource).toEqual({
      id: expect.any(Number),
      indicator: 'urn:example:reports',
      name: 'Reports',
      scopes: ['reports:read'],
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const listed = await t.get('/api/oauth/resources', { token: admin });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((r: { indicator: string }) => r.indicator)).toEqual(
      expect.arrayContaining([INVOICES, 'urn:example:reports']),
    );
    expect((await t.get(`/api/oauth/resources/${resource.id}`, { token: admin })).body.data).toEqual(resource);

    const changed = await t.put(`/api/oauth/resources/${resource.id}`, { scopes: ['reports:read', 'reports:export'] }, { token: admin });
    expect(changed.status).toBe(200);
    expect(changed.body.data).toMatchObject({
      indicator: 'urn:example:reports',
      name: 'Reports',
      scopes: ['reports:read', 'reports:export'],
    });

    expect((await t.delete(`/api/oauth/resources/${resource.id}`, { token: admin })).status).toBe(204);
    expectError(await t.get(`/api/oauth/resources/${resource.id}`, { token: admin }), 404, 'NOT_FOUND');
    expectError(await t.delete(`/api/oauth/resources/${resource.id}`, { token: admin }), 404, 'NOT_FOUND');

    const events = await auditTable(t)
      .selectFrom('audit_events')
      .select(['event_type', 'details', 'subject_user_id'])
      .where('event_type', 'like', 'oauth_resource.%')
      .orderBy('id')
      .execute()
      .then((rows) => rows.filter((row) => row.details.indicator === 'urn:example:reports'));
    expect(events.map((e) => [e.event_type, e.details.resource_id, e.subject_user_id])).toEqual([
      ['oauth_resource.created', resource.id, null],
      ['oauth_resource.updated', resource.id, null],
      ['oauth_resource.deleted', resource.id, null],
    ]);
    expect(events[1].details.fields).toEqual(['scopes']);
  });

  it('refuses an indicator that is not an absolute URI without a fragment, and OpenID Connect’s own scopes (422)', async () => {
    const problems = async (body: Record<string, unknown>) => {
      const res = await t.post(
        '/api/oauth/resources',
        { indicator: 'https://api.example.test', name: 'API', scopes: [], ...body },
        { token: admin },
      );
      expectError(res, 422, 'VALIDATION_ERROR');
      return res.body.error.details.map((d: { field: string }) => d.field);
    };
    expect(await problems({ indicator: 'https://api.example.test/#v1' })).toEqual(['body.indicator']);
    expect(await problems({ indicator: 'invoices' })).toEqual(['body.indicator']);
    expect(await problems({ scopes: ['read', 'openid'] })).toEqual(['body.scopes.1']);
    expect(await problems({ name: '   ' })).toEqual(['body.name']);
    expect(await problems({ scopes: ['two words'] })).toEqual(expect.arrayContaining([expect.stringMatching(/^body\.scopes/)]));
    const [first] = (await t.get('/api/oauth/resources', { token: admin })).body.data;
    expectError(
      await t.put(`/api/oauth/resources/${first.id}`, { indicator: 'https://x.example.test#f' }, { token: admin }),
      422,
      'VALIDATION_ERROR',
    );
  });

  it('refuses a second API with the same indicator (409)', async () => {
    expectError(
      await t.post('/api/oauth/resources', { indicator: INVOICES, name: 'Again', scopes: [] }, { token: admin }),
      409,
      'CONFLICT',
    );
    const other = await t.post(
      '/api/oauth/resources',
      { indicator: 'https://other.example.test', name: 'Other', scopes: [] },
      { token: admin },
    );
    expect(other.status).toBe(201);
    expectError(await t.put(`/api/oauth/resources/${other.body.data.id}`, { indicator: INVOICES }, { token: admin }), 409, 'CONFLICT');
    expect((await t.delete(`/api/oauth/resources/${other.body.data.id}`, { token: admin })).status).toBe(204);
  });

  it('is for admins only (403), and never for an API key, an admin’s included', async () => {
    const user = await t.register();
    expectError(await t.get('/api/oauth/resources', { token: user.access }), 403, 'FORBIDDEN');
    expectError(
      await t.post('/api/oauth/resources', { indicator: 'https://mine.example.test', name: 'Mine', scopes: [] }, { token: user.access }),
      403,
      'FORBIDDEN',
    );
    const [first] = (await t.get('/api/oauth/resources', { token: admin })).body.data;
    expectError(await t.get(`/api/oauth/resources/${first.id}`, { token: user.access }), 403, 'FORBIDDEN');
    expectError(await t.put(`/api/oauth/resources/${first.id}`, { name: 'Mine' }, { token: user.access }), 403, 'FORBIDDEN');
    expectError(await t.delete(`/api/oauth/resources/${first.id}`, { token: user.access }), 403, 'FORBIDDEN');
    const key = await t.post('/api/auth/api-keys', { name: 'Script', current_password: ADMIN.password }, { token: admin });
    expect(key.status).toBe(201);
    expectError(await t.get('/api/oauth/resources', { token: key.body.data.key }), 403, 'FORBIDDEN');
    expectError(
      await t.post(
        '/api/oauth/resources',
        { indicator: 'https://key.example.test', name: 'Key', scopes: [] },
        { token: key.body.data.key },
      ),
      403,
      'FORBIDDEN',
    );
  });
});

describe('an application that names an API', () => {
  it('gets a JWT access token for it that the API verifies offline: typ at+jwt, aud, scope, client_id, sub', async () => {
    const who = await t.register();
    const { exchange } = await signIn(who, { scope: 'openid invoices:read invoices:write', resource: INVOICES });
    // The token request does not name the API again: the token is for the one the authorization named.
    const tokens = await exchange();
    const { payload, protectedHeader } = await jose.jwtVerify(tokens.access_token, jwks(), {
      issuer: t.baseUrl,
      audience: INVOICES,
      typ: 'at+jwt',
    });
    expect(protectedHeader.typ).toBe('at+jwt');
    expect(payload).toMatchObject({ aud: INVOICES, client_id: app.id, sub: claimsOf(who.access).sub, iss: t.baseUrl });
    expect(String(payload.scope).split(' ').sort()).toEqual(['invoices:read', 'invoices:write']);
    expect(tokens.scope?.split(' ').sort()).toEqual(['invoices:read', 'invoices:write']);
    expect(payload).not.toHaveProperty('org_id');
    // Another API refuses it: it is not its audience.
    await expect(
      jose.jwtVerify(tokens.access_token, jwks(), { issuer: t.baseUrl, audience: 'https://other.example.test' }),
    ).rejects.toMatchObject({
      code: 'ERR_JWT_CLAIM_VALIDATION_FAILED',
      claim: 'aud',
    });
  });

  it('naming it again at the token request gives the same; naming another API is invalid_target', async () => {
    const who = await t.register();
    const again = await signIn(who, { scope: 'openid invoices:read', resource: INVOICES });
    const tokens = await again.exchange({ resource: INVOICES });
    const { payload } = await jose.jwtVerify(tokens.access_token, jwks(), { issuer: t.baseUrl, audience: INVOICES, typ: 'at+jwt' });
    expect(payload.scope).toBe('invoices:read');

    const other = await t.post(
      '/api/oauth/resources',
      { indicator: 'https://ledger.example.test', name: 'Ledger', scopes: ['ledger:read'] },
      { token: admin },
    );
    expect(other.status).toBe(201);
    const elsewhere = await signIn(who, { scope: 'openid invoices:read', resource: INVOICES });
    expect(await oauthError(elsewhere.exchange({ resource: 'https://ledger.example.test' }))).toBe('invalid_target');
  });

  it('a refresh gives a new token for the same API', async () => {
    const who = await t.register();
    const { exchange } = await signIn(who, { scope: 'openid offline_access invoices:read', resource: INVOICES });
    const tokens = await exchange();
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    const { payload } = await jose.jwtVerify(refreshed.access_token, jwks(), { issuer: t.baseUrl, audience: INVOICES, typ: 'at+jwt' });
    expect(payload).toMatchObject({ scope: 'invoices:read', client_id: app.id });
  });

  it('an unknown API is invalid_target', async () => {
    const who = await t.register();
    const browser = new FormBrowser(t.baseUrl);
    const { url } = await authorizationRequest(oidc, config, { scope: 'openid invoices:read', resource: 'https://unknown.example.test' });
    const landed = await browser.open(url.href);
    const error = landed.status === 0 ? new URL(landed.url).searchParams.get('error') : landed.html;
    expect(error).toContain('invalid_target');
    expect(who.id).toBeGreaterThan(0);
  });

  it('acting for an organisation: org_id, org_role, org_permissions, and the API scopes the role’s permissions name', async () => {
    const roles = await t.post(
      '/api/organization-roles',
      { key: 'approver', name: 'Approver', permissions: ['org:read', 'invoices:approve'] },
      { token: admin },
    );
    expect(roles.status).toBe(201);
    const owner = await verifiedUser(t);
    const org = await t.post('/api/organizations', { name: 'Acme', slug: 'acme-invoices' }, { token: owner.access });
    expect(org.status).toBe(201);
    const member = await verifiedUser(t);
    await addMember(t, org.body.data.id, member.id, 'approver');

    const { exchange } = await signIn(member, { scope: 'openid invoices:read', resource: INVOICES, organization: 'acme-invoices' });
    const tokens = await exchange();
    const { payload } = await jose.jwtVerify(tokens.access_token, jwks(), { issuer: t.baseUrl, audience: INVOICES, typ: 'at+jwt' });
    expect(payload).toMatchObject({ org_id: org.body.data.id, org_role: 'approver', sub: String(member.id) });
    expect(payload.org_permissions).toEqual(expect.arrayContaining(['org:read', 'invoices:approve']));
    // Asked for: invoices:read; the role's permission names invoices:approve; org:read is no scope of the API.
    expect(String(payload.scope).split(' ').sort()).toEqual(['invoices:approve', 'invoices:read']);
    expect(tokens.scope?.split(' ').sort()).toEqual(['invoices:approve', 'invoices:read']);

    // Without the organisation, only what was asked for.
    const plain = await (await signIn(member, { scope: 'openid invoices:read', resource: INVOICES })).exchange();
    const alone = (await jose.jwtVerify(plain.access_token, jwks(), { issuer: t.baseUrl, audience: INVOICES })).payload;
    expect(alone.scope).toBe('invoices:read');
    expect(alone).not.toHaveProperty('org_id');
  });
});

describe('an application that is not first party', () => {
  it('is given the API’s scopes the person allows on the consent page, which names them', async () => {
    const other = await seedOauthClient(t, { name: 'Partner', type: 'confidential', redirect_uris: [REDIRECT] });
    const partner = await relyingParty(oidc, t, other);
    const who = await t.register();
    const browser = new FormBrowser(t.baseUrl);
    const { url, exchange } = await authorizationRequest(oidc, partner, { scope: 'openid invoices:read', resource: INVOICES });
    const page = await browser.open(url.href);
    const consent = await browser.submit(formTo(page, '/login'), { email: who.email, password: who.password });
    expect(consent.html).toContain('invoices:read');
    const landed = await browser.submit(formTo(consent, '/consent'), { decision: 'allow' });
    const tokens = await exchange(landed);
    const { payload } = await jose.jwtVerify(tokens.access_token, jwks(), { issuer: t.baseUrl, audience: INVOICES, typ: 'at+jwt' });
    expect(payload).toMatchObject({ client_id: other.id, scope: 'invoices:read', sub: String(who.id) });
  });
});

describe('a program with the client credentials grant', () => {
  it('gets a token for the API it names, for itself (sub is its client_id), with the API scopes it asks for', async () => {
    const made = await t.post(
      '/api/oauth/clients',
      { name: 'Batch', type: 'confidential', grant_types: ['client_credentials'], redirect_uris: [] },
      { token: admin },
    );
    expect(made.status).toBe(201);
    const { client_id, client_secret } = made.body.data as { client_id: string; client_secret: string };
    const token = (params: Record<string, string>) =>
      fetch(`${t.baseUrl}/oauth2/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', ...params }),
      });
    const res = await token({ resource: INVOICES, scope: 'invoices:read' });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { access_token: string };
    const { payload } = await jose.jwtVerify(body.access_token, jwks(), { issuer: t.baseUrl, audience: INVOICES, typ: 'at+jwt' });
    expect(payload).toMatchObject({ sub: client_id, client_id, scope: 'invoices:read' });

    const unknown = await token({ resource: 'https://unknown.example.test', scope: 'invoices:read' });
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject({ error: 'invalid_target' });
  });
});

describe('each kind of token is accepted only where it is meant', () => {
  it('the API and userinfo refuse an API’s at+jwt token; the API refuses an ID token as a bearer', async () => {
    const who = await t.register();
    const { exchange } = await signIn(who, { scope: 'openid invoices:read', resource: INVOICES });
    const tokens = await exchange();
    expect(jose.decodeProtectedHeader(tokens.access_token).typ).toBe('at+jwt');
    expectError(await t.get('/api/auth/me', { token: tokens.access_token }), 401, 'UNAUTHORIZED');
    const info = await fetch(`${t.baseUrl}/oauth2/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(info.status).toBe(401);
    expect(info.headers.get('www-authenticate')).toContain('invalid_token');
    expect([undefined, 'JWT']).toContain(jose.decodeProtectedHeader(tokens.id_token!).typ);
    expectError(await t.get('/api/auth/me', { token: tokens.id_token! }), 401, 'UNAUTHORIZED');
    // The API's own access token is still what the API takes.
    expect((await t.get('/api/auth/me', { token: who.access })).status).toBe(200);
  });

  it('an API that pins typ at+jwt refuses the service’s own access tokens (access+jwt) and ID tokens', async () => {
    const who = await t.register();
    const { exchange } = await signIn(who, { scope: 'openid invoices:read', resource: INVOICES });
    const tokens = await exchange();
    expect(jose.decodeProtectedHeader(who.access).typ).toBe('access+jwt');
    // The service's own tokens (HS256 here, unless ALGORITHM names a key pair) are refused whatever their key.
    await expect(jose.jwtVerify(who.access, jwks(), { typ: 'at+jwt' })).rejects.toThrow();
    // An ID token, signed with a key the JWK Set publishes, is refused for its type alone, whatever its audience.
    await expect(jose.jwtVerify(tokens.id_token!, jwks(), { typ: 'at+jwt' })).rejects.toMatchObject({
      code: 'ERR_JWT_CLAIM_VALIDATION_FAILED',
      claim: 'typ',
    });
    expect((await jose.jwtVerify(tokens.access_token, jwks(), { typ: 'at+jwt' })).payload.aud).toBe(INVOICES);
  });
});
