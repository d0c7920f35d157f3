import { createHash, randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { Secret, TOTP } from 'otpauth';
import type { ProviderCodeTable, ProviderFlowTable, UserIdentityTable } from '../src/providers/identity-repository.js';
import { startTestApp, uniqueEmail, type TestContext } from './support/app.js';
import { auditTable } from './support/audit.js';
import { expectError } from './support/expect.js';
import { startUpstreamIssuer, type UpstreamIssuer } from './support/upstream-issuer.js';

// Signing in with an upstream provider, driven over plain HTTP: the application's PKCE pair, the
// service's 302 to the provider, the provider's 302 back to the callback, the one-time code at
// redirect_to and its exchange. The providers are real HTTP peers the test runs (test/support/upstream-issuer.ts).

const APP = 'http://app.test/signed-in';
/** The service's own origin, as the browser reaches it: the callback the providers send people back to. */
const HOST = { host: 'accounts.test' };

let t: TestContext;
let admin: string;
let oidc: UpstreamIssuer;
let github: UpstreamIssuer;

const rows = () =>
  t.db.withTables<{ user_identities: UserIdentityTable; provider_flows: ProviderFlowTable; provider_codes: ProviderCodeTable }>();
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

beforeAll(async () => {
  [oidc, github] = await Promise.all([startUpstreamIssuer(), startUpstreamIssuer({ shape: 'github' })]);
  t = await startTestApp({ AUTH_REDIRECT_URLS: 'http://app.test/*' });
  admin = await t.adminToken();
  const made = await Promise.all([
    t.post(
      '/api/identity-providers',
      { slug: 'corp', name: 'Corp', client_id: oidc.clientId, client_secret: oidc.clientSecret, issuer: oidc.issuer },
      { token: admin },
    ),
    t.post(
      '/api/identity-providers',
      {
        slug: 'github',
        client_id: github.clientId,
        client_secret: github.clientSecret,
        authorization_url: `${github.issuer}/login/oauth/authorize`,
        token_url: `${github.issuer}/login/oauth/access_token`,
        userinfo_url: `${github.issuer}/user`,
        emails_url: `${github.issuer}/user/emails`,
      },
      { token: admin },
    ),
  ]);
  expect(made.map((res) => res.status)).toEqual([201, 201]);
});
afterAll(async () => {
  await t?.close();
  await Promise.all([oidc?.close(), github?.close()]);
});

interface Landed {
  /** Where the browser ended up: redirect_to with `code`, or with `error`. */
  url: URL;
  verifier: string;
  /** The provider's redirect to the service's callback, path and query. */
  callback: string;
}

/** A browser's sign-in, following each 302 by hand. */
async function signIn(slug: string): Promise<Landed> {
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({ redirect_to: APP, code_challenge: s256(verifier), code_challenge_method: 'S256' });
  const start = await t.get(`/api/auth/providers/${slug}/authorize?${query.toString()}`, { headers: HOST });
  expect(start.status).toBe(302);
  const atProvider = await fetch(start.headers.location, { redirect: 'manual' });
  expect(atProvider.status).toBe(302);
  const callback = new URL(atProvider.headers.get('location')!);
  expect(callback.origin).toBe('http://accounts.test');
  const back = await t.get(callback.pathname + callback.search, { headers: HOST });
  expect(back.status).toBe(302);
  return { url: new URL(back.headers.location), verifier, callback: callback.pathname + callback.search };
}

async function exchange(landed: Landed) {
  const code = landed.url.searchParams.get('code');
  expect(landed.url.searchParams.get('error')).toBeNull();
  expect(code).toEqual(expect.any(String));
  return t.post('/api/auth/providers/token', { code, code_verifier: landed.verifier });
}

const errorOf = (landed: Landed) => ({ error: landed.url.searchParams.get('error'), at: landed.url.origin + landed.url.pathname });
const identitiesOf = (userId: number) => rows().selectFrom('user_identities').selectAll().where('user_id', '=', userId).execute();

describe('OpenID Connect', () => {
  it('signs up a new person, with state, nonce and PKCE towards the provider and no token in any URL', async () => {
    const email = uniqueEmail('oidc');
    oidc.person = { sub: `sub-${email}`, email, email_verified: true, name: 'Grace Hopper' };
    const landed = await signIn('corp');
    expect([...landed.url.searchParams.keys()]).toEqual(['code']);
    expect(landed.url.origin + landed.url.pathname).toBe(APP);

    const sent = oidc.authorizations.at(-1)!;
    expect(sent.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sent.get('nonce')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sent.get('code_challenge_method')).toBe('S256');
    expect(sent.get('code_challenge')).not.toBe(s256(landed.verifier));
    expect(sent.get('redirect_uri')).toBe('http://accounts.test/api/auth/providers/corp/callback');
    expect(sent.get('scope')).toBe('openid email profile');

    const res = await exchange(landed);
    expect(res.status).toBe(200);
    expect(res.body.data.user).toMatchObject({ email, name: 'Grace Hopper', email_verified: true, role: 'user' });
    const claims = jwt.decode(res.body.data.access_token) as Record<string, unknown>;
    expect(claims).toMatchObject({ amr: ['fed'], aal: 'aal1' });
    const [identity] = await identitiesOf(res.body.data.user.id);
    expect(identity).toMatchObject({ subject: `sub-${email}`, email });

    const sessions = await t.get('/api/auth/sessions', { token: res.body.data.access_token });
    expect(sessions.status).toBe(200);
    const events = await auditTable(t)
      .selectFrom('audit_events')
      .selectAll()
      .where('subject_user_id', '=', res.body.data.user.id)
      .orderBy('id')
      .execute();
    expect(events.map((e) => e.event_type)).toEqual(['user.registered', 'identity.linked', 'login.succeeded']);
    expect(events[2].details).toMatchObject({ provider: 'corp', amr: ['fed'] });
  });

  it('signs the same identity in again, to the same account', async () => {
    const email = uniqueEmail('again');
    oidc.person = { sub: `sub-${email}`, email, email_verified: true };
    const first = await exchange(await signIn('corp'));
    const second = await exchange(await signIn('corp'));
    expect(second.status).toBe(200);
    expect(second.body.data.user.id).toBe(first.body.data.user.id);
    expect(await identitiesOf(first.body.data.user.id)).toHaveLength(1);
  });

  it('links an existing account when the provider vouches for the address; an address it does not vouch for waits for a mailed code', async () => {
    const user = await t.register();
    await t.db.updateTable('users').set({ email_verified: true }).where('id', '=', user.id).execute();
    // The provider does not vouch for the address: nothing is linked, the exchange asks for the code mailed to it.
    oidc.person = { sub: `sub-b-${user.email}`, email: user.email, email_verified: false };
    expectError(await exchange(await signIn('corp')), 403, 'EMAIL_VERIFICATION_REQUIRED');
    expect(await identitiesOf(user.id)).toEqual([]);

    oidc.person = { sub: `sub-c-${user.email}`, email: user.email.toUpperCase(), email_verified: true };
    const res = await exchange(await signIn('corp'));
    expect(res.status).toBe(200);
    expect(res.body.data.user.id).toBe(user.id);
    expect((await identitiesOf(user.id)).map((i) => i.subject)).toEqual([`sub-c-${user.email}`]);
  });

  it('refuses a disabled account, and a deleted one', async () => {
    const email = uniqueEmail('disabled');
    oidc.person = { sub: `sub-${email}`, email, email_verified: true };
    const first = await exchange(await signIn('corp'));
    const id = first.body.data.user.id;
    expect((await t.put(`/api/users/${id}`, { is_active: false }, { token: admin })).status).toBe(200);
    expect(errorOf(await signIn('corp'))).toEqual({ error: 'account_disabled', at: APP });

    // A code issued before the account was disabled is refused at the exchange.
    expect((await t.put(`/api/users/${id}`, { is_active: true }, { token: admin })).status).toBe(200);
    const landed = await signIn('corp');
    expect((await t.delete(`/api/users/${id}`, { token: admin })).status).toBe(204);
    expectError(await exchange(landed), 403, 'FORBIDDEN');
    expect(errorOf(await signIn('corp'))).toEqual({ error: 'account_disabled', at: APP });
  });

  it('asks a user with a second factor for it, and the session then says both', async () => {
    const email = uniqueEmail('mfa');
    oidc.person = { sub: `sub-${email}`, email, email_verified: true };
    const first = await exchange(await signIn('corp'));
    const token = first.body.data.access_token;
    const enrolled = await t.post('/api/auth/mfa/totp', {}, { token });
    const secret = enrolled.body.data.secret as string;
    const code = () => new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate();
    const confirmed = await t.post(`/api/auth/mfa/totp/${enrolled.body.data.factor_id}/confirm`, { code: code() }, { token });
    expect(confirmed.status).toBe(200);
    const [recoveryCode] = confirmed.body.data.recovery_codes as string[];

    const second = await exchange(await signIn('corp'));
    expectError(second, 403, 'MFA_REQUIRED');
    const mfaToken = second.body.error.mfa_token;
    const wrong = code() === '000000' ? '111111' : '000000';
    expectError(await t.post('/api/auth/mfa/verify', { mfa_token: mfaToken, method: 'totp', code: wrong }), 400, 'INVALID_CODE');
    const verified = await t.post('/api/auth/mfa/verify', { mfa_token: mfaToken, method: 'recovery_code', code: recoveryCode });
    expect(verified.status).toBe(200);
    expect(jwt.decode(verified.body.data.access_token)).toMatchObject({ amr: ['fed', 'otp', 'mfa'], aal: 'aal2' });
    const events = await auditTable(t)
      .selectFrom('audit_events')
      .selectAll()
      .where('subject_user_id', '=', first.body.data.user.id)
      .orderBy('id')
      .execute();
    expect(events.find((e) => e.event_type === 'mfa.challenged')!.details).toMatchObject({ provider: 'corp' });
    expect(events.filter((e) => e.event_type === 'login.succeeded').at(-1)!.details).toMatchObject({
      provider: 'corp',
      amr: ['fed', 'otp', 'mfa'],
    });
    expect(events.find((e) => e.event_type === 'mfa.failed')).toBeDefined();
  });
});

describe('what an attacker tries', () => {
  it('refuses a replayed or altered state', async () => {
    const email = uniqueEmail('replay');
    oidc.person = { sub: `sub-${email}`, email, email_verified: true };
    const landed = await signIn('corp');
    expectError(await t.get(landed.callback, { headers: HOST }), 400, 'INVALID_TOKEN');
    const altered = landed.callback.replace(/state=([^&]+)/, (_m, state: string) => `state=${state.slice(0, -2)}AA`);
    expectError(await t.get(altered, { headers: HOST }), 400, 'INVALID_TOKEN');
    expectError(await t.get('/api/auth/providers/corp/callback?code=x', { headers: HOST }), 400, 'INVALID_TOKEN');
  });

  it('spends a code on its first attempt: a wrong verifier, then the right one, and a reused code, are refused', async () => {
    const email = uniqueEmail('verifier');
    oidc.person = { sub: `sub-${email}`, email, email_verified: true };
    const landed = await signIn('corp');
    const code = landed.url.searchParams.get('code');
    const wrong = randomBytes(32).toString('base64url');
    expectError(await t.post('/api/auth/providers/token', { code, code_verifier: wrong }), 400, 'INVALID_CODE');
    expectError(await t.post('/api/auth/providers/token', { code, code_verifier: landed.verifier }), 400, 'INVALID_CODE');

    const next = await signIn('corp');
    expect((await exchange(next)).status).toBe(200);
    expectError(await exchange(next), 400, 'INVALID_CODE');
    const failed = await auditTable(t)
      .selectFrom('audit_events')
      .selectAll()
      .where('event_type', '=', 'login.failed')
      .orderBy('id', 'desc')
      .execute();
    expect(failed.map((e) => e.details)).toContainEqual({ reason: 'wrong_code_verifier', provider: 'corp' });
  });

  it('sends nobody to an address off the allow-list', async () => {
    const before = await rows().selectFrom('provider_flows').select('id').execute();
    for (const target of ['https://evil.test/', 'http://app.test@evil.test/', 'javascript:alert(1)']) {
      const query = new URLSearchParams({ redirect_to: target, code_challenge: s256('x'.repeat(43)), code_challenge_method: 'S256' });
      const res = await t.get(`/api/auth/providers/corp/authorize?${query.toString()}`, { headers: HOST });
      expectError(res, 400, 'INVALID_REDIRECT');
      expect(res.body.error.message).toBe('The redirect address is not on the allow-list (AUTH_REDIRECT_URLS)');
      expect(res.headers.location).toBeUndefined();
    }
    expect(await rows().selectFrom('provider_flows').select('id').execute()).toHaveLength(before.length);
  });

  it.each([
    ['wrong_nonce', 'a nonce not its own'],
    ['wrong_aud', 'an audience of someone else'],
    ['wrong_key', 'a signature by a key not in the JWKS'],
    ['wrong_iss', 'another issuer'],
    ['expired', 'an expiry in the past'],
  ] as const)('refuses an ID token with %s (%s), and makes nothing', async (misbehaviour, _what) => {
    const email = uniqueEmail(misbehaviour);
    oidc.person = { sub: `sub-${email}`, email, email_verified: true };
    oidc.misbehave = misbehaviour;
    try {
      expect(errorOf(await signIn('corp'))).toEqual({ error: 'invalid_response', at: APP });
    } finally {
      oidc.misbehave = 'none';
    }
    expect(await t.db.selectFrom('users').select('id').where('email', '=', email).execute()).toEqual([]);
  });

  it('tells the application when the provider cannot be reached, and keeps nothing', async () => {
    const gone = await startUpstreamIssuer();
    await gone.close();
    expect(
      (await t.post('/api/identity-providers', { slug: 'gone', name: 'Gone', client_id: 'c', issuer: gone.issuer }, { token: admin }))
        .status,
    ).toBe(201);
    const before = await rows().selectFrom('provider_flows').select('id').execute();
    const query = new URLSearchParams({ redirect_to: APP, code_challenge: s256('y'.repeat(43)), code_challenge_method: 'S256' });
    const res = await t.get(`/api/auth/providers/gone/authorize?${query.toString()}`, { headers: HOST });
    expect(res.status).toBe(302);
    const back = new URL(res.headers.location);
    expect(back.origin + back.pathname).toBe(APP);
    expect(back.searchParams.get('error')).toBe('temporarily_unavailable');
    expect(await rows().selectFrom('provider_flows').select('id').execute()).toHaveLength(before.length);
  });

  it('signs nobody in with a deleted or disabled provider', async () => {
    const other = await startUpstreamIssuer();
    try {
      const made = await t.post(
        '/api/identity-providers',
        { slug: 'short-lived', name: 'S', client_id: other.clientId, client_secret: other.clientSecret, issuer: other.issuer },
        { token: admin },
      );
      expect(made.status).toBe(201);
      other.person = { sub: 'someone-new', email: uniqueEmail('deleted'), email_verified: true };
      const verifier = randomBytes(32).toString('base64url');
      const query = new URLSearchParams({ redirect_to: APP, code_challenge: s256(verifier), code_challenge_method: 'S256' });
      const start = await t.get(`/api/auth/providers/short-lived/authorize?${query.toString()}`, { headers: HOST });
      const atProvider = await fetch(start.headers.location, { redirect: 'manual' });
      const callback = new URL(atProvider.headers.get('location')!);

      expect((await t.put('/api/identity-providers/short-lived', { enabled: false }, { token: admin })).status).toBe(200);
      expectError(await t.get(`/api/auth/providers/short-lived/authorize?${query.toString()}`, { headers: HOST }), 404, 'NOT_FOUND');
      expect((await t.delete('/api/identity-providers/short-lived', { token: admin })).status).toBe(204);
      expectError(await t.get(callback.pathname + callback.search, { headers: HOST }), 400, 'INVALID_TOKEN');
      expect(await t.db.selectFrom('users').select('id').where('email', '=', other.person.email!).execute()).toEqual([]);
    } finally {
      await other.close();
    }
  });
});

describe('a GitHub-shaped OAuth2 provider', () => {
  it('signs up with the primary address from /user/emails, verified as GitHub says', async () => {
    const email = uniqueEmail('gh');
    github.person = { sub: String(100000 + Math.floor(Math.random() * 1e6)), name: 'Octo Cat' };
    github.emails = [
      { email: uniqueEmail('other'), primary: false, verified: true },
      { email, primary: true, verified: true },
    ];
    const landed = await signIn('github');
    expect(github.authorizations.at(-1)!.get('nonce')).toBeNull();
    expect(github.authorizations.at(-1)!.get('code_challenge_method')).toBe('S256');
    const res = await exchange(landed);
    expect(res.status).toBe(200);
    expect(res.body.data.user).toMatchObject({ email, name: 'Octo Cat', email_verified: true });
    const [identity] = await identitiesOf(res.body.data.user.id);
    expect(identity.subject).toBe(github.person.sub);
  });

  it('links no existing account on an unverified primary address until a mailed code proves it', async () => {
    const user = await t.register();
    await t.db.updateTable('users').set({ email_verified: true }).where('id', '=', user.id).execute();
    github.person = { sub: String(200000 + Math.floor(Math.random() * 1e6)) };
    github.emails = [{ email: user.email, primary: true, verified: false }];
    expectError(await exchange(await signIn('github')), 403, 'EMAIL_VERIFICATION_REQUIRED');
    expect(await identitiesOf(user.id)).toEqual([]);
  });
});
