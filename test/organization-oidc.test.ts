import { Secret, TOTP } from 'otpauth';
import { startTestApp, type RegisteredUser, type TestContext } from './support/app.js';
import { expectError } from './support/expect.js';
import { FormBrowser, formTo } from './support/hosted-pages.js';
import { claimsOf } from './support/jwt.js';
import { freePort } from './support/net.js';
import { seedOauthClient } from './support/oauth-clients.js';
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
import { addMember, verifiedUser } from './support/organizations.js';

// Organisations in the OpenID Connect provider: an application (openid-client) signs a person in on
// the hosted pages, asking for the `organizations` scope and for one organisation by the `organization`
// parameter; ID tokens are checked with jose against the published JWK Set, access tokens by
// introspection. And the second step of an API login that named an organisation signs in for it.

let t: TestContext;
let oidc: OpenIdClient;
let jose: Jose;
let app: Application;
let config: Configuration;
let owner: RegisteredUser;
let member: RegisteredUser;
let acme: { id: number; slug: string; name: string };
let globex: { id: number; slug: string; name: string };

async function createOrg(token: string, name: string, slug: string) {
  const res = await t.post('/api/organizations', { name, slug }, { token });
  expect(res.status).toBe(201);
  return res.body.data as { id: number; slug: string; name: string };
}

/** The person signs in on the hosted page for the application, with the authorization's extra parameters. */
async function signIn(who: RegisteredUser, params: Record<string, string>) {
  const browser = new FormBrowser(t.baseUrl);
  const { url, exchange } = await authorizationRequest(oidc, config, { scope: 'openid offline_access', prompt: 'consent', ...params });
  const page = await browser.open(url.href);
  const landed = await browser.submit(formTo(page, '/login'), { email: who.email, password: who.password });
  return { landed, exchange: () => exchange(landed) };
}

async function verifiedIdToken(idToken: string) {
  const jwks = jose.createRemoteJWKSet(new URL(`${t.baseUrl}/.well-known/jwks.json`));
  const { payload } = await jose.jwtVerify(idToken, jwks, { issuer: t.baseUrl, audience: app.id });
  return payload;
}

beforeAll(async () => {
  ({ oidc, jose } = await relyingPartyLibraries());
  const port = await freePort();
  t = await startTestApp({ APP_URL: `http://127.0.0.1:${port}` }, { port });
  app = await seedOauthClient(t, {
    name: 'Dashboard',
    type: 'confidential',
    redirect_uris: [REDIRECT],
    first_party: true,
    scopes: ['openid', 'profile', 'email', 'offline_access', 'organizations'],
  });
  config = await relyingParty(oidc, t, app);
  owner = await verifiedUser(t);
  member = await verifiedUser(t);
  acme = await createOrg(owner.access, 'Acme Corp', 'acme');
  globex = await createOrg(owner.access, 'Globex', 'globex');
  await addMember(t, acme.id, member.id, 'admin');
});
afterAll(() => t?.close());

describe('the organizations scope', () => {
  it('lists the person’s organisations and roles in the ID token and at userinfo', async () => {
    const { exchange } = await signIn(owner, { scope: 'openid organizations' });
    const tokens = await exchange();
    const expected = [
      { id: acme.id, slug: 'acme', name: 'Acme Corp', role: 'owner' },
      { id: globex.id, slug: 'globex', name: 'Globex', role: 'owner' },
    ];
    const idToken = await verifiedIdToken(tokens.id_token!);
    expect(idToken.organizations).toEqual(expect.arrayContaining(expected));
    expect(idToken.organizations).toHaveLength(2);
    expect(idToken.org_id).toBeUndefined();
    const info = await oidc.fetchUserInfo(config, tokens.access_token, idToken.sub!);
    expect(info.organizations).toEqual(expect.arrayContaining(expected));
  });

  it('is left out without the scope', async () => {
    const tokens = await (await signIn(member, { scope: 'openid' })).exchange();
    expect((await verifiedIdToken(tokens.id_token!)).organizations).toBeUndefined();
  });
});

describe('the organization parameter', () => {
  it('by slug or id: the tokens carry org_id and org_role', async () => {
    for (const value of ['acme', String(acme.id)]) {
      const tokens = await (await signIn(member, { organization: value })).exchange();
      const idToken = await verifiedIdToken(tokens.id_token!);
      expect(idToken).toMatchObject({ org_id: acme.id, org_role: 'admin' });
      const introspected = await oidc.tokenIntrospection(config, tokens.access_token);
      expect(introspected).toMatchObject({ active: true, org_id: acme.id, org_role: 'admin' });
    }
  });

  it('for an organisation the person is not a member of ends in access_denied, and no code', async () => {
    for (const value of ['globex', String(globex.id), 'no-such-org']) {
      const { landed } = await signIn(member, { organization: value });
      const params = new URL(landed.url).searchParams;
      expect(params.get('error')).toBe('access_denied');
      expect(params.get('code')).toBeNull();
    }
  });

  it('malformed is invalid_request', async () => {
    const browser = new FormBrowser(t.baseUrl);
    const { url } = await authorizationRequest(oidc, config, { scope: 'openid', organization: 'Not A Slug!' });
    const landed = await browser.open(url.href);
    expect(new URL(landed.url).searchParams.get('error')).toBe('invalid_request');
  });

  it('without it, a later sign-in of the same application acts for no organisation', async () => {
    await (await signIn(member, { organization: 'acme' })).exchange();
    const tokens = await (await signIn(member, {})).exchange();
    expect((await verifiedIdToken(tokens.id_token!)).org_id).toBeUndefined();
    expect((await oidc.tokenIntrospection(config, tokens.access_token)).org_id).toBeUndefined();
  });
});

describe('a refresh with organization_id', () => {
  it('switches the organisation, to none with an empty value, and keeps it on later refreshes', async () => {
    await addMember(t, globex.id, member.id, 'member');
    try {
      const first = await (await signIn(member, { organization: 'acme' })).exchange();
      const switched = await oidc.refreshTokenGrant(config, first.refresh_token!, { organization_id: String(globex.id) });
      expect(await verifiedIdToken(switched.id_token!)).toMatchObject({ org_id: globex.id, org_role: 'member' });
      expect(await oidc.tokenIntrospection(config, switched.access_token)).toMatchObject({ org_id: globex.id, org_role: 'member' });
      const kept = await oidc.refreshTokenGrant(config, switched.refresh_token!);
      expect(await oidc.tokenIntrospection(config, kept.access_token)).toMatchObject({ org_id: globex.id });
      const none = await oidc.refreshTokenGrant(config, kept.refresh_token!, { organization_id: '' });
      expect((await oidc.tokenIntrospection(config, none.access_token)).org_id).toBeUndefined();
      expect((await verifiedIdToken(none.id_token!)).org_id).toBeUndefined();
    } finally {
      await t.delete(`/api/organizations/${globex.id}/members/${member.id}`, { token: owner.access });
    }
  });

  it('to an organisation the person is not a member of is access_denied, and the refresh token is not spent', async () => {
    const first = await (await signIn(member, { organization: 'acme' })).exchange();
    expect(await oauthError(oidc.refreshTokenGrant(config, first.refresh_token!, { organization_id: String(globex.id) }))).toBe(
      'access_denied',
    );
    const next = await oidc.refreshTokenGrant(config, first.refresh_token!);
    expect(await oidc.tokenIntrospection(config, next.access_token)).toMatchObject({ org_id: acme.id, org_role: 'admin' });
  });

  it('after the person left the organisation answers without its claims, and forgets it', async () => {
    const leaver = await verifiedUser(t);
    await addMember(t, acme.id, leaver.id, 'member');
    const first = await (await signIn(leaver, { organization: 'acme' })).exchange();
    expect(await oidc.tokenIntrospection(config, first.access_token)).toMatchObject({ org_id: acme.id });
    expect((await t.delete(`/api/organizations/${acme.id}/members/${leaver.id}`, { token: leaver.access })).status).toBe(204);
    const next = await oidc.refreshTokenGrant(config, first.refresh_token!);
    expect((await oidc.tokenIntrospection(config, next.access_token)).org_id).toBeUndefined();
    await addMember(t, acme.id, leaver.id, 'member');
    const again = await oidc.refreshTokenGrant(config, next.refresh_token!);
    expect((await oidc.tokenIntrospection(config, again.access_token)).org_id).toBeUndefined();
  });
});

describe('the mfa_token of a login that named an organisation', () => {
  const totpCode = (secret: string) =>
    new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: Date.now() });

  /** A user with a TOTP app; the second steps below answer with recovery codes, which no clock step holds back. */
  async function withTotp(): Promise<RegisteredUser & { codes: string[] }> {
    const user = await verifiedUser(t);
    const enrolled = await t.post('/api/auth/mfa/totp', { name: 'Phone' }, { token: user.access });
    expect(enrolled.status).toBe(201);
    const { factor_id: id, secret } = enrolled.body.data;
    const confirmed = await t.post(`/api/auth/mfa/totp/${id}/confirm`, { code: totpCode(secret) }, { token: user.access });
    expect(confirmed.status).toBe(200);
    return { ...user, codes: confirmed.body.data.recovery_codes };
  }

  async function mfaToken(user: RegisteredUser, organizationId: number): Promise<string> {
    const res = await t.post('/api/auth/login/json', { email: user.email, password: user.password, organization_id: organizationId });
    expectError(res, 403, 'MFA_REQUIRED');
    return res.body.error.mfa_token;
  }

  it('carries it into mfa/verify: the tokens act for it and the session remembers it', async () => {
    const user = await withTotp();
    await addMember(t, acme.id, user.id, 'member');
    const token = await mfaToken(user, acme.id);
    const res = await t.post('/api/auth/mfa/verify', { mfa_token: token, method: 'recovery_code', code: user.codes[0] });
    expect(res.status).toBe(200);
    expect(claimsOf(res.body.data.access_token)).toMatchObject({ org_id: acme.id, org_role: 'member', aal: 'aal2' });
    const refreshed = await t.post('/api/auth/refresh', { refresh_token: res.body.data.refresh_token });
    expect(claimsOf(refreshed.body.data.access_token)).toMatchObject({ org_id: acme.id, org_role: 'member' });
  });

  it('refuses with 403 when the user left the organisation between the two steps, and opens nothing', async () => {
    const user = await withTotp();
    await addMember(t, acme.id, user.id, 'member');
    const token = await mfaToken(user, acme.id);
    expect((await t.delete(`/api/organizations/${acme.id}/members/${user.id}`, { token: user.access })).status).toBe(204);
    const before = await t.db.selectFrom('sessions').select('id').where('user_id', '=', user.id).execute();
    expectError(await t.post('/api/auth/mfa/verify', { mfa_token: token, method: 'recovery_code', code: user.codes[0] }), 403, 'FORBIDDEN');
    const after = await t.db.selectFrom('sessions').select('id').where('user_id', '=', user.id).execute();
    expect(after).toEqual(before);
  });
});
