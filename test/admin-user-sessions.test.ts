import { randomUUID } from 'node:crypto';
import { ADMIN, startTestApp, type RegisteredUser, type TestContext } from './support/app.js';
import { auditRows } from './support/audit.js';
import { expectError, expectUnauthorized } from './support/expect.js';
import { claimsOf } from './support/jwt.js';
import { freePort } from './support/net.js';
import { seedOauthClient } from './support/oauth-clients.js';
import {
  oauthError,
  REDIRECT,
  relyingPartyLibraries,
  signInThroughProvider,
  silentSignIn,
  type Application,
  type OpenIdClient,
} from './support/relying-party.js';

// An admin's view of another user's sessions: the list the user sees of their own, and ending one of
// them as the user could, recorded with the admin as actor. Nobody else may do either.

let t: TestContext;
let admin: string;
let adminId: number;
let oidc: OpenIdClient;
let app: Application;

beforeAll(async () => {
  ({ oidc } = await relyingPartyLibraries());
  // The issuer is APP_URL: the app listens where APP_URL says.
  const port = await freePort();
  t = await startTestApp({ APP_URL: `http://127.0.0.1:${port}` }, { port });
  admin = await t.adminToken();
  adminId = Number(claimsOf(admin).sub);
  app = await seedOauthClient(t, { name: 'Notes', type: 'confidential', redirect_uris: [REDIRECT], first_party: true });
});
afterAll(() => t?.close());

/** A user with two sessions: the one registration opened and one of a later login. */
async function userWithTwoSessions(): Promise<{ user: RegisteredUser; second: { access: string; refresh: string; sid: string } }> {
  const user = await t.register();
  const login = await t.post('/api/auth/login/json', { email: user.email, password: user.password });
  expect(login.status).toBe(200);
  const { access_token: access, refresh_token: refresh } = login.body.data;
  return { user, second: { access, refresh, sid: claimsOf(access).sid } };
}

const sessionRow = (id: string) =>
  t.db.selectFrom('sessions').select(['id', 'user_id', 'revoked_at']).where('id', '=', id).executeTakeFirstOrThrow();
const refresh = (token: string) => t.post('/api/auth/refresh', { refresh_token: token });

describe('GET /api/users/{id}/sessions', () => {
  it('lists the live sessions of a user to an admin, newest first, as the user sees them', async () => {
    const { user, second } = await userWithTwoSessions();
    const first = claimsOf(user.access).sid;
    const res = await t.get(`/api/users/${user.id}/sessions`, { token: admin });
    expect(res.status).toBe(200);
    expect(res.body.data.map((session: { id: string }) => session.id)).toEqual([second.sid, first]);
    // The same items as the user's own list, but for `current`, which marks the admin's own session only.
    const own = await t.get('/api/auth/sessions', { token: second.access });
    expect(res.body.data).toEqual(own.body.data.map((session: { current: boolean }) => ({ ...session, current: false })));

    // A revoked session is no longer listed.
    expect((await t.delete(`/api/auth/sessions/${first}`, { token: second.access })).status).toBe(204);
    const after = await t.get(`/api/users/${user.id}/sessions`, { token: admin });
    expect(after.body.data.map((session: { id: string }) => session.id)).toEqual([second.sid]);
  });

  it("marks the admin's own session when the user is the admin", async () => {
    const res = await t.get(`/api/users/${adminId}/sessions`, { token: admin });
    expect(res.status).toBe(200);
    const current = res.body.data.filter((session: { current: boolean }) => session.current);
    expect(current.map((session: { id: string }) => session.id)).toEqual([claimsOf(admin).sid]);
  });

  it('refuses anyone but an admin, the user themselves included', async () => {
    const { user } = await userWithTwoSessions();
    const other = await t.register();
    expectError(await t.get(`/api/users/${user.id}/sessions`, { token: other.access }), 403, 'FORBIDDEN');
    expectError(await t.get(`/api/users/${user.id}/sessions`, { token: user.access }), 403, 'FORBIDDEN');
    expectUnauthorized(await t.get(`/api/users/${user.id}/sessions`));
  });

  it('answers 404 for an unknown or deleted user, and 422 for an id that is not one', async () => {
    expectError(await t.get('/api/users/2147483647/sessions', { token: admin }), 404, 'NOT_FOUND');
    const gone = await t.register();
    expect((await t.delete(`/api/users/${gone.id}`, { token: admin })).status).toBe(204);
    expectError(await t.get(`/api/users/${gone.id}/sessions`, { token: admin }), 404, 'NOT_FOUND');
    expectError(await t.get('/api/users/0/sessions', { token: admin }), 422, 'VALIDATION_ERROR');
  });
});

describe('DELETE /api/users/{id}/sessions/{session_id}', () => {
  it("ends one of the user's sessions, its tokens at once, and records the admin as actor", async () => {
    const { user, second } = await userWithTwoSessions();
    const res = await t.delete(`/api/users/${user.id}/sessions/${second.sid}`, { token: admin });
    expect(res.status).toBe(204);
    expect(res.body).toEqual({});

    expect((await sessionRow(second.sid)).revoked_at).toBeInstanceOf(Date);
    expectUnauthorized(await t.get('/api/auth/me', { token: second.access }));
    expectUnauthorized(await refresh(second.refresh));
    // The other session goes on.
    expect((await t.get('/api/auth/me', { token: user.access })).status).toBe(200);
    expect((await refresh(user.refresh)).status).toBe(200);

    const events = await auditRows(t, user.id, 'session.revoked');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ actor_user_id: adminId, subject_user_id: user.id, details: { session_id: second.sid } });
    // And through the API, as the console reads it.
    const listed = await t.get(`/api/audit-events?user_id=${user.id}&event_type=session.revoked`, { token: admin });
    expect(listed.body.data).toEqual([
      expect.objectContaining({ actor_user_id: adminId, subject_user_id: user.id, details: { session_id: second.sid } }),
    ]);

    // Once ended it is no longer one of their live sessions.
    expectError(await t.delete(`/api/users/${user.id}/sessions/${second.sid}`, { token: admin }), 404, 'NOT_FOUND');
    expect(await auditRows(t, user.id, 'session.revoked')).toHaveLength(1);
  });

  it('refuses anyone but an admin, and nothing is revoked', async () => {
    const { user, second } = await userWithTwoSessions();
    const attacker = await t.register();
    // Another user, and the user themselves (who has their own route for it).
    for (const token of [attacker.access, user.access])
      expectError(await t.delete(`/api/users/${user.id}/sessions/${second.sid}`, { token }), 403, 'FORBIDDEN');
    expectUnauthorized(await t.delete(`/api/users/${user.id}/sessions/${second.sid}`));

    expect(await sessionRow(second.sid)).toEqual({ id: second.sid, user_id: user.id, revoked_at: null });
    expect((await t.get('/api/auth/me', { token: second.access })).status).toBe(200);
    expect((await refresh(second.refresh)).status).toBe(200);
    expect(await auditRows(t, user.id, 'session.revoked')).toEqual([]);
  });

  it('answers 404 for a session of another user named under the wrong user, and nothing changes', async () => {
    const { user: victim, second } = await userWithTwoSessions();
    const other = await t.register();
    expectError(await t.delete(`/api/users/${other.id}/sessions/${second.sid}`, { token: admin }), 404, 'NOT_FOUND');
    // Not the admin's own session either, through their own id.
    expectError(await t.delete(`/api/users/${adminId}/sessions/${second.sid}`, { token: admin }), 404, 'NOT_FOUND');

    expect(await sessionRow(second.sid)).toEqual({ id: second.sid, user_id: victim.id, revoked_at: null });
    expect((await t.get('/api/auth/me', { token: second.access })).status).toBe(200);
    expect(await auditRows(t, victim.id, 'session.revoked')).toEqual([]);
    expect(await auditRows(t, other.id, 'session.revoked')).toEqual([]);
    // The other user's sessions are as they were too.
    expect((await t.get('/api/auth/me', { token: other.access })).status).toBe(200);
  });

  it('answers 404 for an unknown session and 422 for an id that is not a UUID', async () => {
    const user = await t.register();
    expectError(await t.delete(`/api/users/${user.id}/sessions/${randomUUID()}`, { token: admin }), 404, 'NOT_FOUND');
    expectError(await t.delete(`/api/users/${user.id}/sessions/not-a-session`, { token: admin }), 422, 'VALIDATION_ERROR');
    expect((await t.get('/api/auth/me', { token: user.access })).status).toBe(200);
  });

  it('lets an admin end another of their own sessions through their own id', async () => {
    const login = await t.post('/api/auth/login/json', ADMIN);
    const other = claimsOf(login.body.data.access_token).sid;
    expect((await t.delete(`/api/users/${adminId}/sessions/${other}`, { token: admin })).status).toBe(204);
    expectUnauthorized(await t.get('/api/auth/me', { token: login.body.data.access_token }));
    expect((await t.get('/api/auth/me', { token: admin })).status).toBe(200);
  });

  it('ends what the OpenID Connect provider opened through the session, as when the user revokes it', async () => {
    const who = await t.register();
    const { config, tokens, browser, sid } = await signInThroughProvider(oidc, t, app, who);
    expect((await oidc.tokenIntrospection(config, tokens.access_token)).active).toBe(true);
    // The application's access token acts through that session on the API.
    expect((await t.get('/api/auth/me', { token: tokens.access_token })).status).toBe(200);

    expect((await t.delete(`/api/users/${who.id}/sessions/${sid}`, { token: admin })).status).toBe(204);
    expect(await oauthError(oidc.refreshTokenGrant(config, tokens.refresh_token!))).toBe('invalid_grant');
    expect((await oidc.tokenIntrospection(config, tokens.access_token)).active).toBe(false);
    expectUnauthorized(await t.get('/api/auth/me', { token: tokens.access_token }));
    // The browser's provider session is gone too: it cannot sign in silently.
    expect(await silentSignIn(oidc, config, browser)).toBe('login_required');
    // The session registration opened goes on.
    expect((await t.get('/api/auth/me', { token: who.access })).status).toBe(200);
  });
});
