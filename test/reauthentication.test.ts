import { createHash, randomBytes, randomUUID } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { Secret, TOTP } from 'otpauth';
import type { ProviderFlowTable, UserIdentityTable } from '../src/providers/identity-repository.js';
import { startTestApp, TEST_SECRET, uniqueEmail, type RegisteredUser, type Response, type TestContext } from './support/app.js';
import { auditRows } from './support/audit.js';
import { expectError } from './support/expect.js';
import { claimsOf } from './support/jwt.js';
import { startOidcUpstream, type OidcUpstream } from './support/oidc-upstream.js';
import { startSmtpServer, type ReceivedMail, type TestSmtpServer } from './support/smtp.js';

// Proof of presence before a new way in. The attack: a thief holding only a user's access token
// (30 minutes of life) links their own identity, makes an API key, enrols a TOTP app or a passkey,
// or makes new recovery codes, each of which would outlive the token. Those now want the password
// with the request, or a session that proved who holds it within REAUTH_MAX_AGE_MINUTES (5);
// POST /api/auth/reauthenticate renews that proof. Sessions are aged by moving their
// `authenticated_at` back, as time would. Mail goes through a real SMTP server; the provider a
// user links is a real OpenID provider (test/support/oidc-upstream.ts).

const APP = 'http://app.test/settings';
const HOST = { host: 'accounts.test' };
const NEW_WAY_IN = 'A new sign-in method was added to your account';
const REAUTH_REQUIRED_BODY = {
  success: false,
  error: {
    code: 'REAUTH_REQUIRED',
    message:
      'This adds a way to sign in: confirm your password (current_password) or re-authenticate (POST /api/auth/reauthenticate) first',
  },
};
const MINUTE_MS = 60_000;

let t: TestContext;
let smtp: TestSmtpServer;
let upstream: OidcUpstream;

const tables = () => t.db.withTables<{ provider_flows: ProviderFlowTable; user_identities: UserIdentityTable }>();

beforeAll(async () => {
  [upstream, smtp] = await Promise.all([
    startOidcUpstream({ redirectUris: ['http://accounts.test/api/auth/providers/corp/callback'] }),
    startSmtpServer(),
  ]);
  t = await startTestApp({ AUTH_REDIRECT_URLS: 'http://app.test/*', SMTP_URL: smtp.url, MAIL_POLL_INTERVAL_MS: '100' });
  const made = await t.post(
    '/api/identity-providers',
    { slug: 'corp', name: 'Corp', client_id: upstream.clientId, client_secret: upstream.clientSecret, issuer: upstream.issuer },
    { token: await t.adminToken() },
  );
  expect(made.status).toBe(201);
});
afterAll(async () => {
  await t?.close();
  await Promise.all([upstream?.close(), smtp?.close()]);
});

/** Moves the last authentication of the session of `access` back by `ms`, as time would. */
async function authenticatedAgo(access: string, ms: number): Promise<void> {
  await t.db
    .updateTable('sessions')
    .set({ authenticated_at: new Date(Date.now() - ms) })
    .where('id', '=', claimsOf(access).sid)
    .execute();
}

const authenticatedAt = async (access: string) =>
  (await t.db.selectFrom('sessions').select('authenticated_at').where('id', '=', claimsOf(access).sid).executeTakeFirstOrThrow())
    .authenticated_at;

/** A code of the app for the 30-second step `stepsAhead` after now (each step is taken once). */
const totpCode = (secret: string, stepsAhead = 0) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({
    timestamp: Date.now() + stepsAhead * 30_000,
  });

/** Enrols and confirms a TOTP app (while the session is fresh); its secret and the recovery codes of the first factor. */
async function withTotp(user: RegisteredUser): Promise<{ secret: string; recoveryCodes: string[] }> {
  const enrolled = await t.post('/api/auth/mfa/totp', { name: 'Phone' }, { token: user.access });
  expect(enrolled.status).toBe(201);
  const { factor_id: id, secret } = enrolled.body.data;
  const confirmed = await t.post(`/api/auth/mfa/totp/${id}/confirm`, { code: totpCode(secret) }, { token: user.access });
  expect(confirmed.status).toBe(200);
  return { secret, recoveryCodes: confirmed.body.data.recovery_codes };
}

const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

/** The five operations that add a way in, each as a request of `token`, with `extra` in its body. */
function waysIn(token: string, extra: Record<string, unknown> = {}): Record<string, () => Promise<Response>> {
  const options = { token, headers: HOST };
  return {
    createApiKey: () => t.post('/api/auth/api-keys', { name: 'Deploy bot', expires_in_days: 365, ...extra }, options),
    enrolTotp: () => t.post('/api/auth/mfa/totp', { name: 'Thief phone', ...extra }, options),
    passkeyRegistrationOptions: () => t.post('/api/auth/passkeys/registration/options', { ...extra }, options),
    regenerateRecoveryCodes: () => t.post('/api/auth/mfa/recovery-codes', { ...extra }, options),
    linkIdentity: () =>
      t.post(
        '/api/auth/identities/corp/link',
        { redirect_to: APP, code_challenge: pkce().challenge, code_challenge_method: 'S256', ...extra },
        options,
      ),
  };
}

/** Everything a way in would write for the user: keys, factors, challenges, recovery codes, link flows, mail. */
async function waysInOf(user: RegisteredUser) {
  const [apiKeys, factors, challenges, recoveryCodes, linkFlows, identities, mail] = await Promise.all([
    t.db.selectFrom('api_keys').select('id').where('user_id', '=', user.id).execute(),
    t.db.selectFrom('mfa_factors').select(['id', 'confirmed_at']).where('user_id', '=', user.id).orderBy('id').execute(),
    t.db.selectFrom('mfa_challenges').select('id').where('user_id', '=', user.id).where('purpose', '=', 'passkey_registration').execute(),
    t.db.selectFrom('mfa_recovery_codes').select('code_hash').where('user_id', '=', user.id).orderBy('code_hash').execute(),
    tables().selectFrom('provider_flows').select('id').where('link_user_id', '=', user.id).execute(),
    tables().selectFrom('user_identities').select('id').where('user_id', '=', user.id).execute(),
    t.db.selectFrom('mail_outbox').select('id').where('recipient', '=', user.email).where('subject', '=', NEW_WAY_IN).execute(),
  ]);
  return { apiKeys, factors, challenges, recoveryCodes, linkFlows, identities, mail };
}

/** The notice of a new way in whose text says `what`. */
const noticeOf = (user: RegisteredUser, what: string): Promise<ReceivedMail> =>
  smtp.waitFor((m) => m.to.includes(user.email) && m.subject === NEW_WAY_IN && m.text.includes(what));

describe('a stolen access token alone adds no way in', () => {
  it('a session that signed in 10 minutes ago is refused each of the five: 403 REAUTH_REQUIRED, nothing written, nothing mailed', async () => {
    const user = await t.register();
    // A second factor, so that new recovery codes would be made, were the request let through.
    await withTotp(user);
    const before = await waysInOf(user);
    expect(before.mail).toHaveLength(1);

    await authenticatedAgo(user.access, 10 * MINUTE_MS);
    for (const [operation, send] of Object.entries(waysIn(user.access))) {
      const res = await send();
      expect({ operation, status: res.status, body: res.body }).toEqual({ operation, status: 403, body: REAUTH_REQUIRED_BODY });
    }
    expect(await waysInOf(user)).toEqual(before);

    // A refresh proves nothing: the token it gives is refused the same.
    const refreshed = await t.post('/api/auth/refresh', { refresh_token: user.refresh });
    expect(refreshed.status).toBe(200);
    expect((await waysIn(refreshed.body.data.access_token).createApiKey()).body).toEqual(REAUTH_REQUIRED_BODY);
    expect(await waysInOf(user)).toEqual(before);
  });

  it('within REAUTH_MAX_AGE_MINUTES (5) of the sign-in the token alone is enough', async () => {
    const user = await t.register();
    await authenticatedAgo(user.access, 4 * MINUTE_MS);
    expect((await waysIn(user.access).createApiKey()).status).toBe(201);
    expect((await waysIn(user.access).passkeyRegistrationOptions()).status).toBe(200);
  });
});

describe('current_password in the request is proof', () => {
  it('each of the five goes through with it, and each new way in is mailed to the account', async () => {
    const user = await t.register();
    await authenticatedAgo(user.access, 60 * MINUTE_MS);
    const proven = waysIn(user.access, { current_password: user.password });

    const key = await proven.createApiKey();
    expect(key.status).toBe(201);
    const keyMail = await noticeOf(user, 'An API key ("Deploy bot", starting');
    expect(keyMail.text).toContain(key.body.data.prefix);
    expect(keyMail.text).not.toContain(key.body.data.key);
    expect(keyMail.text).toContain('It was done from the address 127.0.0.1');
    expect(keyMail.text).toMatch(/ on \d{4}-\d\d-\d\d \d\d:\d\d UTC\./);
    expect(keyMail.text).toContain('If this was not you, someone else can use your account: delete the key');

    const enrolled = await proven.enrolTotp();
    expect(enrolled.status).toBe(201);
    // Confirming asks nothing more: only the enrolment's answer showed the secret.
    const confirmed = await t.post(
      `/api/auth/mfa/totp/${enrolled.body.data.factor_id}/confirm`,
      { code: totpCode(enrolled.body.data.secret) },
      { token: user.access },
    );
    expect(confirmed.status).toBe(200);
    await noticeOf(user, 'An authenticator app ("Thief phone") was added to your account as a second factor');

    expect((await proven.regenerateRecoveryCodes()).status).toBe(200);
    await noticeOf(user, 'A new set of recovery codes was made for your account');

    const options = await proven.passkeyRegistrationOptions();
    expect(options.status).toBe(200);
    expect((await waysInOf(user)).challenges).toHaveLength(1);

    const started = await proven.linkIdentity();
    expect(started.status).toBe(200);
    expect(started.body.data.authorization_url.startsWith(`${upstream.issuer}/`)).toBe(true);
    expect((await waysInOf(user)).linkFlows).toHaveLength(1);
  });

  it('a wrong one is refused as a wrong password (400 INVALID_PASSWORD), counted as a failed login, and nothing is made', async () => {
    const user = await t.register();
    await authenticatedAgo(user.access, 60 * MINUTE_MS);
    const before = await waysInOf(user);
    const res = await waysIn(user.access, { current_password: 'not-the-password' }).createApiKey();
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, error: { code: 'INVALID_PASSWORD', message: 'Current password is incorrect' } });
    expect(await waysInOf(user)).toEqual(before);
    expect(await auditRows(t, user.id, 'login.failed')).toEqual([
      expect.objectContaining({ details: { reason: 'wrong_current_password' } }),
    ]);
  });

  it('a link made through the provider is mailed when the identity joins the account', async () => {
    const user = await t.register();
    const account = { sub: `sub-${user.email}`, email: uniqueEmail('elsewhere'), email_verified: true };
    upstream.accounts.set(account.sub, account);
    const code = pkce();
    const started = await t.post(
      '/api/auth/identities/corp/link',
      { redirect_to: APP, code_challenge: code.challenge, code_challenge_method: 'S256' },
      { token: user.access, headers: HOST },
    );
    expect(started.status).toBe(200);
    const callback = await upstream.signIn(started.body.data.authorization_url, account.sub);
    const back = await t.get(callback.pathname + callback.search, { headers: HOST });
    expect(back.status).toBe(302);
    const landed = new URL(back.headers.location);
    // Not linked yet, so not mailed yet: the exchange links it.
    expect((await waysInOf(user)).mail).toHaveLength(0);
    const exchanged = await t.post('/api/auth/providers/token', { code: landed.searchParams.get('code'), code_verifier: code.verifier });
    expect(exchanged.status).toBe(200);
    expect((await waysInOf(user)).identities).toHaveLength(1);
    const notice = await noticeOf(user, 'A sign-in with the provider "Corp" was linked to your account');
    expect(notice.text).toContain('unlink it');
  });
});

describe('POST /api/auth/reauthenticate', () => {
  it('with the password renews the session: its new access token adds a way in, the token from before still does not', async () => {
    const user = await t.register();
    await authenticatedAgo(user.access, 60 * MINUTE_MS);
    const old = await authenticatedAt(user.access);
    // The token a thief takes: issued (by a refresh) before the owner re-authenticates, it says the hour-old authentication.
    const stolen = (await t.post('/api/auth/refresh', { refresh_token: user.refresh })).body.data;
    expect(claimsOf(stolen.access_token).auth_time).toBe(Math.floor(old.getTime() / 1000));

    const wrong = await t.post('/api/auth/reauthenticate', { password: 'not-the-password' }, { token: user.access });
    expect(wrong.body).toEqual({ success: false, error: { code: 'INVALID_PASSWORD', message: 'Current password is incorrect' } });
    expect(await authenticatedAt(user.access)).toEqual(old);

    const res = await t.post('/api/auth/reauthenticate', { password: user.password }, { token: user.access });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      data: { access_token: expect.any(String), token_type: 'bearer', expires_in: 1800 },
    });
    const fresh = res.body.data.access_token as string;
    const renewed = await authenticatedAt(user.access);
    expect(renewed.getTime()).toBeGreaterThan(Date.now() - MINUTE_MS);
    expect(claimsOf(fresh)).toMatchObject({ sid: claimsOf(user.access).sid, auth_time: Math.floor(renewed.getTime() / 1000) });
    expect(await auditRows(t, user.id, 'session.reauthenticated')).toEqual([
      expect.objectContaining({ actor_user_id: user.id, details: { session_id: claimsOf(user.access).sid, method: 'password' } }),
    ]);

    // The token the thief took before the owner re-authenticated is still refused.
    expect((await waysIn(stolen.access_token).createApiKey()).body).toEqual(REAUTH_REQUIRED_BODY);
    expect((await waysIn(fresh).createApiKey()).status).toBe(201);
    // A refresh carries the renewed authentication.
    const refreshed = await t.post('/api/auth/refresh', { refresh_token: stolen.refresh_token });
    expect(claimsOf(refreshed.body.data.access_token).auth_time).toBe(claimsOf(fresh).auth_time);
  });

  it('with a code of a TOTP app or a recovery code, each good once; a wrong one is 400 INVALID_CODE and renews nothing', async () => {
    const user = await t.register();
    const { secret, recoveryCodes } = await withTotp(user);
    await authenticatedAgo(user.access, 60 * MINUTE_MS);
    const old = await authenticatedAt(user.access);
    const reauthenticate = (code: string) => t.post('/api/auth/reauthenticate', { code }, { token: user.access });

    for (const wrong of ['000000', 'AAAA-AAAA-AAAA-AAAA']) expectError(await reauthenticate(wrong), 400, 'INVALID_CODE');
    expect(await authenticatedAt(user.access)).toEqual(old);
    expect((await auditRows(t, user.id, 'mfa.failed')).map((row) => row.details)).toEqual([
      { method: 'totp', reason: 'wrong_code', stage: 'reauthentication' },
      { method: 'recovery_code', reason: 'wrong_code', stage: 'reauthentication' },
    ]);

    // The step after the one confirmation took.
    const code = totpCode(secret, 1);
    expect((await reauthenticate(code)).status).toBe(200);
    expectError(await reauthenticate(code), 400, 'INVALID_CODE');

    await authenticatedAgo(user.access, 60 * MINUTE_MS);
    expect((await reauthenticate(recoveryCodes[0].toLowerCase())).status).toBe(200);
    expectError(await reauthenticate(recoveryCodes[0]), 400, 'INVALID_CODE');
    expect((await auditRows(t, user.id, 'session.reauthenticated')).map((row) => row.details.method)).toEqual(['totp', 'recovery_code']);
    const left = await t.db
      .selectFrom('mfa_recovery_codes')
      .select('id')
      .where('user_id', '=', user.id)
      .where('used_at', 'is', null)
      .execute();
    expect(left).toHaveLength(9);
  });

  it('takes one proof: both, or neither, is a 422', async () => {
    const user = await t.register();
    expectError(
      await t.post('/api/auth/reauthenticate', { password: user.password, code: '123456' }, { token: user.access }),
      422,
      'VALIDATION_ERROR',
    );
    expectError(await t.post('/api/auth/reauthenticate', {}, { token: user.access }), 422, 'VALIDATION_ERROR');
  });

  it('refuses API keys (403 FORBIDDEN) and requests without a token (401)', async () => {
    const user = await t.register();
    const key = await waysIn(user.access).createApiKey();
    expect(key.status).toBe(201);
    expectError(await t.post('/api/auth/reauthenticate', { password: user.password }, { token: key.body.data.key }), 403, 'FORBIDDEN');
    expectError(await t.post('/api/auth/reauthenticate', { password: user.password }), 401, 'UNAUTHORIZED');
  });
});

describe('guessing the password with a stolen token', () => {
  let limited: TestContext;
  beforeAll(async () => {
    limited = await startTestApp({ RATE_LIMIT_ENABLED: 'true', AUTH_RATE_LIMIT_PER_MINUTE: '1000', LOGIN_MAX_FAILURES: '3' });
  });
  afterAll(() => limited?.close());

  it('wrong passwords at re-authentication and in current_password count like failed logins: locked out, as the login is', async () => {
    const user = await limited.register();
    const reauthenticate = (password: string) => limited.post('/api/auth/reauthenticate', { password }, { token: user.access });
    expectError(await reauthenticate('guess-1'), 400, 'INVALID_PASSWORD');
    expectError(await reauthenticate('guess-2'), 400, 'INVALID_PASSWORD');
    const guess = await limited.post('/api/auth/api-keys', { name: 'Key', current_password: 'guess-3' }, { token: user.access });
    expectError(guess, 400, 'INVALID_PASSWORD');
    // A password to check spends the credential budget (AUTH_RATE_LIMIT_PER_MINUTE), not only the general one.
    expect(guess.headers['ratelimit-limit']).toBe('1000');

    // The lock holds for the right password too, here and at the login.
    expectError(await reauthenticate(user.password), 429, 'RATE_LIMITED');
    expectError(await limited.post('/api/auth/login/json', { email: user.email, password: user.password }), 429, 'RATE_LIMITED');
  });
});

describe('access tokens are taken only under their own JWT type', () => {
  /** The claims of `user`'s access token, signed again with the service's key under the header `typ`. */
  const resigned = (user: RegisteredUser, typ: string) => {
    const { iat: _iat, exp: _exp, jti: _jti, ...claims } = claimsOf(user.access);
    return jwt.sign({ ...claims, jti: randomUUID() }, TEST_SECRET, { algorithm: 'HS256', expiresIn: 600, header: { alg: 'HS256', typ } });
  };

  it("refuses the claims of an access token signed with the service's key as an ID token (typ JWT) or as a refresh token", async () => {
    const user = await t.register();
    expect(jwt.decode(user.access, { complete: true })!.header.typ).toBe('access+jwt');
    expect(jwt.decode(user.refresh, { complete: true })!.header.typ).toBe('refresh+jwt');
    for (const typ of ['JWT', 'refresh+jwt', 'at+jwt'])
      expect(await t.get('/api/auth/me', { token: resigned(user, typ) })).toMatchObject({
        status: 401,
        body: { success: false, error: { code: 'UNAUTHORIZED', message: 'Not authenticated' } },
      });
    // The control: the same claims under the access token's own type pass.
    expect((await t.get('/api/auth/me', { token: resigned(user, 'access+jwt') })).status).toBe(200);
  });

  it('refuses a refresh token presented as an access token, and an access token presented as a refresh token', async () => {
    const user = await t.register();
    expect((await t.get('/api/auth/me', { token: user.refresh })).status).toBe(401);
    expect((await t.post('/api/auth/refresh', { refresh_token: user.access })).status).toBe(401);
  });
});
