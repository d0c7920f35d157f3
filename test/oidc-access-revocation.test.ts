import { startTestApp, type RegisteredUser, type TestContext } from './support/app.js';
import { expectError } from './support/expect.js';
import { freePort } from './support/net.js';
import { seedOauthClient } from './support/oauth-clients.js';
import {
  oauthError,
  REDIRECT,
  relyingPartyLibraries,
  signInThroughProvider,
  silentSignIn,
  type Application,
  type Configuration,
  type OpenIdClient,
} from './support/relying-party.js';
import { linkToken, startSmtpServer, type TestSmtpServer } from './support/smtp.js';

// Revoking a person's access (a password change or reset, logging out everywhere, the command line's
// revoke-sessions, disabling, deleting) ends every token, code, grant and session the OpenID Connect
// provider issued them, whatever became of the service session the hosted sign-in opened; and that
// service session lives as long as the provider session it backs.

const DAY_MS = 24 * 3600 * 1000;

let t: TestContext;
let smtp: TestSmtpServer;
let oidc: OpenIdClient;
let admin: string;
let app: Application;

beforeAll(async () => {
  ({ oidc } = await relyingPartyLibraries());
  smtp = await startSmtpServer();
  // The issuer is APP_URL: the app listens where APP_URL says.
  const port = await freePort();
  t = await startTestApp({ APP_URL: `http://127.0.0.1:${port}`, SMTP_URL: smtp.url, MAIL_POLL_INTERVAL_MS: '100' }, { port });
  admin = await t.adminToken();
  app = await seedOauthClient(t, { name: 'Notes', type: 'confidential', redirect_uris: [REDIRECT], first_party: true });
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
});

/** Every record the provider keeps for the person (sessions, codes, tokens, grants), by model. */
const providerRecords = async (userId: number) =>
  (
    await t.db
      .withTables<{ oidc_records: { model: string; user_id: number | null } }>()
      .selectFrom('oidc_records')
      .select('model')
      .where('user_id', '=', userId)
      .execute()
  ).map((row) => row.model);

/**
 * A person signed in to the application through the hosted pages, whose service session then expired
 * and was purged by housekeeping, as it was a week after such a sign-in: their refresh token still works
 * (offline access does not end with a session), and is used once, so that the tokens to end are the
 * rotated ones.
 */
async function signedInThenSessionPurged() {
  const who = await t.register();
  const signedIn = await signInThroughProvider(oidc, t, app, who);
  await t.db
    .updateTable('sessions')
    .set({ expires_at: new Date(Date.now() - 30 * DAY_MS) })
    .where('id', '=', signedIn.sid)
    .execute();
  await t.app.housekeeping.purge();
  expect(await t.db.selectFrom('sessions').select('id').where('id', '=', signedIn.sid).executeTakeFirst()).toBeUndefined();
  const tokens = await oidc.refreshTokenGrant(signedIn.config, signedIn.tokens.refresh_token!);
  expect(tokens.refresh_token).toEqual(expect.any(String));
  expect((await oidc.tokenIntrospection(signedIn.config, tokens.access_token)).active).toBe(true);
  expect(await providerRecords(who.id)).toEqual(expect.arrayContaining(['Grant', 'RefreshToken', 'AccessToken']));
  return { who, ...signedIn, tokens };
}

/** Nothing the provider gave the person works any more, and nothing of theirs is left in its records. */
async function expectEverythingEnded(
  who: RegisteredUser,
  config: Configuration,
  tokens: { access_token: string; refresh_token?: string },
  browser: Parameters<typeof silentSignIn>[2],
) {
  expect(await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token!))).toBe('invalid_grant');
  expect((await oidc.tokenIntrospection(config, tokens.access_token)).active).toBe(false);
  const info = await fetch(`${t.baseUrl}/oauth2/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
  expect(info.status).toBe(401);
  expect(info.headers.get('www-authenticate')).toContain('invalid_token');
  expect(await silentSignIn(oidc, config, browser)).toBe('login_required');
  expect(await providerRecords(who.id)).toEqual([]);
}

describe('revoking a person’s access ends what the provider issued them, whatever became of the service session', () => {
  it('a password change', async () => {
    const { who, config, tokens, browser } = await signedInThenSessionPurged();
    const changed = await t.post(
      '/api/auth/change-password',
      { current_password: who.password, new_password: 'another-password-456' },
      { token: who.access },
    );
    expect(changed.status).toBe(200);
    await expectEverythingEnded(who, config, tokens, browser);
  });

  it('a password set by an admin', async () => {
    const { who, config, tokens, browser } = await signedInThenSessionPurged();
    expect((await t.put(`/api/users/${who.id}`, { password: 'set-by-the-admin-789' }, { token: admin })).status).toBe(200);
    await expectEverythingEnded(who, config, tokens, browser);
  });

  it('a password reset', async () => {
    const { who, config, tokens, browser } = await signedInThenSessionPurged();
    expect((await t.post('/api/auth/forgot-password', { email: who.email })).status).toBe(200);
    const mail = await smtp.waitFor((m) => m.to.includes(who.email) && m.subject === 'Reset your password');
    const reset = await t.post('/api/auth/reset-password', {
      token: linkToken(mail, 'reset-password'),
      new_password: 'a-reset-password-1',
    });
    expect(reset.status).toBe(200);
    await expectEverythingEnded(who, config, tokens, browser);
  });

  it('logging out of every session', async () => {
    const { who, config, tokens, browser } = await signedInThenSessionPurged();
    expect((await t.post('/api/auth/logout', { all: true }, { token: who.access })).status).toBe(200);
    expectError(await t.get('/api/auth/me', { token: who.access }), 401, 'UNAUTHORIZED');
    await expectEverythingEnded(who, config, tokens, browser);
  });

  it('the command line’s revoke-sessions', async () => {
    const { who, config, tokens, browser } = await signedInThenSessionPurged();
    // What `revoke-sessions --user` runs, on the app's own database.
    expect(await t.app.services.users.revokeAllSessions(who.id, 'cli')).toBe(1);
    await expectEverythingEnded(who, config, tokens, browser);
  });

  it('disabling the user', async () => {
    const { who, config, tokens, browser } = await signedInThenSessionPurged();
    expect((await t.put(`/api/users/${who.id}`, { is_active: false }, { token: admin })).status).toBe(200);
    await expectEverythingEnded(who, config, tokens, browser);
    // Enabled again, the person signs in anew; nothing of before comes back.
    expect((await t.put(`/api/users/${who.id}`, { is_active: true }, { token: admin })).status).toBe(200);
    expect(await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token!))).toBe('invalid_grant');
  });

  it('deleting the user', async () => {
    const { who, config, tokens, browser } = await signedInThenSessionPurged();
    expect((await t.delete(`/api/users/${who.id}`, { token: admin })).status).toBe(204);
    await expectEverythingEnded(who, config, tokens, browser);
  });

  it('leaves another person’s tokens alone', async () => {
    const { who } = await signedInThenSessionPurged();
    const other = await signedInThenSessionPurged();
    expect((await t.post('/api/auth/logout', { all: true }, { token: who.access })).status).toBe(200);
    expect((await oidc.tokenIntrospection(other.config, other.tokens.access_token)).active).toBe(true);
    expect((await oidc.refreshTokenGrant(other.config, other.tokens.refresh_token!)).access_token).toEqual(expect.any(String));
  });
});

describe('the service session of a hosted sign-in', () => {
  const session = (sid: string) =>
    t.db.selectFrom('sessions').select(['created_at', 'expires_at', 'revoked_at']).where('id', '=', sid).executeTakeFirstOrThrow();

  it('lives as long as the provider session it backs: SESSION_MAX_DAYS from the sign-in', async () => {
    const who = await t.register();
    const { sid, config, browser } = await signInThroughProvider(oidc, t, app, who);
    const maxMs = t.config.sessions.maxDays * DAY_MS;
    const opened = await session(sid);
    // The provider counts in whole seconds from the sign-in, a moment after the session opened.
    expect(Math.abs(opened.expires_at.getTime() - opened.created_at.getTime() - maxMs)).toBeLessThan(5000);
    // Silent sign-ins use the provider session; the service session goes on to the same end, no further.
    expect(await silentSignIn(oidc, config, browser)).toBeNull();
    expect((await session(sid)).expires_at.getTime()).toBe(opened.expires_at.getTime());
    const provider = await t.db
      .withTables<{ oidc_records: { model: string; service_session_id: string | null; expires_at: Date | null } }>()
      .selectFrom('oidc_records')
      .select('expires_at')
      .where('model', '=', 'Session')
      .where('service_session_id', '=', sid)
      .executeTakeFirstOrThrow();
    expect(Math.abs(provider.expires_at!.getTime() - opened.expires_at.getTime())).toBeLessThan(5000);
  });

  it('once expired, ends the provider session: no silent sign-in on a session the person cannot see', async () => {
    const who = await t.register();
    const { sid, config, browser } = await signInThroughProvider(oidc, t, app, who);
    expect(await silentSignIn(oidc, config, browser)).toBeNull();
    await t.db
      .updateTable('sessions')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', sid)
      .execute();
    expect((await t.get('/api/auth/sessions', { token: who.access })).body.data.map((s: { id: string }) => s.id)).not.toContain(sid);
    expect(await silentSignIn(oidc, config, browser)).toBe('login_required');
    // Nor does the provider carry the expired session on.
    expect((await session(sid)).expires_at.getTime()).toBeLessThan(Date.now());
  });
});
