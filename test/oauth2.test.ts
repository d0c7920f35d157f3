import { createHash } from 'node:crypto';
import jwt from 'jsonwebtoken';
import request from 'supertest';
import { ResourceOwnerPassword } from 'simple-oauth2';
import { startTestApp, type TestContext } from './support/app.js';
import { expectError } from './support/expect.js';

// A standard OAuth2 client library, configured only from what the contract's security scheme
// declares: the token URL (/api/auth/login) and the refresh URL, and the password grant.

let t: TestContext;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
const sidOf = (token: string) => (jwt.decode(token) as { sid: string }).sid;
const session = (sid: string) => t.db.selectFrom('sessions').selectAll().where('id', '=', sid).executeTakeFirstOrThrow();

function oauthClient(refreshPath?: string) {
  return new ResourceOwnerPassword({
    client: { id: 'any-client', secret: 'any-secret' },
    auth: { tokenHost: t.baseUrl, tokenPath: '/api/auth/login', refreshPath },
    options: { authorizationMethod: 'body' },
  });
}

describe('OAuth2 clients (simple-oauth2)', () => {
  it.each([
    { refreshUrl: 'the token URL (RFC 6749 §6)', refreshPath: undefined },
    { refreshUrl: '/api/auth/refresh', refreshPath: '/api/auth/refresh' },
  ])('sign in with the password grant and refresh at $refreshUrl', async ({ refreshPath }) => {
    const user = await t.register();
    const client = oauthClient(refreshPath);

    const first = await client.getToken({ username: user.email, password: user.password });
    expect(first.token).toMatchObject({ token_type: 'bearer', expires_in: 1800 });
    const firstAccess = first.token.access_token as string;
    const firstRefresh = first.token.refresh_token as string;
    expect((await t.get('/api/auth/me', { token: firstAccess })).body.data.email).toBe(user.email);

    const second = await first.refresh();
    const access = second.token.access_token as string;
    const refresh = second.token.refresh_token as string;
    expect(second.token).toMatchObject({ token_type: 'bearer', expires_in: 1800 });
    expect(refresh).not.toBe(firstRefresh);
    // The same session, rotated: it now holds the new refresh token's hash.
    expect(sidOf(refresh)).toBe(sidOf(firstRefresh));
    const row = await session(sidOf(refresh));
    expect(row.refresh_token_hash).toBe(sha256(refresh));
    expect(row.revoked_at).toBeNull();
    expect((await t.get('/api/auth/me', { token: access })).body.data.id).toBe(user.id);

    // And again, from the rotated token.
    const third = await second.refresh();
    expect((await session(sidOf(refresh))).refresh_token_hash).toBe(sha256(third.token.refresh_token as string));
  });

  it('a refresh with a revoked session fails as the refresh operation does', async () => {
    const user = await t.register();
    const token = await oauthClient().getToken({ username: user.email, password: user.password });
    await t.post('/api/auth/logout', {}, { token: token.token.access_token as string });
    await expect(token.refresh()).rejects.toMatchObject({ output: { statusCode: 401 } });
    expect((await session(sidOf(token.token.refresh_token as string))).revoked_at).not.toBeNull();
  });
});

describe('the token URL and /api/auth/refresh take form-encoded refresh grants', () => {
  it('POST /api/auth/login with grant_type=refresh_token rotates the session', async () => {
    const user = await t.register();
    const res = await t.post(
      '/api/auth/login',
      { grant_type: 'refresh_token', refresh_token: user.refresh, client_id: 'x' },
      { form: true },
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      success: true,
      token_type: 'bearer',
      expires_in: 1800,
      data: { token_type: 'bearer', expires_in: 1800 },
    });
    expect(res.body.access_token).toBe(res.body.data.access_token);
    expect(res.body.refresh_token).toBe(res.body.data.refresh_token);
    expect((await session(sidOf(user.refresh))).refresh_token_hash).toBe(sha256(res.body.refresh_token));
  });

  it('POST /api/auth/refresh accepts a form body, with or without grant_type', async () => {
    const user = await t.register();
    const first = await t.post('/api/auth/refresh', { grant_type: 'refresh_token', refresh_token: user.refresh }, { form: true });
    expect(first.status).toBe(200);
    expect((await session(sidOf(user.refresh))).refresh_token_hash).toBe(sha256(first.body.data.refresh_token));
    const second = await t.post('/api/auth/refresh', { refresh_token: first.body.data.refresh_token }, { form: true });
    expect(second.status).toBe(200);
    expect((await session(sidOf(user.refresh))).refresh_token_hash).toBe(sha256(second.body.data.refresh_token));
  });

  it('a refresh grant with a forged token is a 401 and changes no session', async () => {
    const user = await t.register();
    const before = await session(sidOf(user.refresh));
    const forged = jwt.sign(
      { sub: String(user.id), type: 'refresh', sid: sidOf(user.refresh), jti: 'x' },
      'another-secret-that-is-long-enough-for-hs256',
    );
    const res = await t.post('/api/auth/login', { grant_type: 'refresh_token', refresh_token: forged }, { form: true });
    expectError(res, 401, 'UNAUTHORIZED');
    expect(await session(sidOf(user.refresh))).toEqual(before);
  });

  it('an unknown grant type is a 422 that names grant_type', async () => {
    const user = await t.register();
    const res = await t.post(
      '/api/auth/login',
      { grant_type: 'client_credentials', username: user.email, password: user.password },
      { form: true },
    );
    expectError(res, 422, 'VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([{ field: 'body.grant_type', message: expect.any(String) }]);
    const sessions = await t.db.selectFrom('sessions').select('id').where('user_id', '=', user.id).execute();
    expect(sessions).toHaveLength(1);
  });

  it('a refresh grant without its token, or a password grant without its password, names the missing field alone', async () => {
    const refresh = await t.post('/api/auth/login', { grant_type: 'refresh_token' }, { form: true });
    expectError(refresh, 422, 'VALIDATION_ERROR');
    expect(refresh.body.error.details).toEqual([{ field: 'body.refresh_token', message: 'is required' }]);
    const password = await t.post('/api/auth/login', { username: 'someone@example.com' }, { form: true });
    expectError(password, 422, 'VALIDATION_ERROR');
    expect(password.body.error.details).toEqual([{ field: 'body.password', message: 'is required' }]);
  });

  // The form is one flat object in the contract (all fields optional), so that generated clients send
  // only the fields they are given; the service still holds each grant to its own fields.
  it.each([
    [
      'a password grant with a refresh token',
      { username: 'EMAIL', password: 'PASSWORD', refresh_token: 'REFRESH' },
      'body.refresh_token',
      'is not allowed',
    ],
    [
      'a refresh grant with a username',
      { grant_type: 'refresh_token', refresh_token: 'REFRESH', username: 'EMAIL' },
      'body.username',
      'is not allowed',
    ],
    [
      'a refresh grant with a password',
      { grant_type: 'refresh_token', refresh_token: 'REFRESH', password: 'PASSWORD' },
      'body.password',
      'is not allowed',
    ],
    ['a refresh token without grant_type', { refresh_token: 'REFRESH' }, 'body.grant_type', 'is required'],
    [
      'the refresh grant with a password login',
      { grant_type: 'refresh_token', username: 'EMAIL', password: 'PASSWORD' },
      'body.grant_type',
      'must be equal to one of the allowed values',
    ],
  ])('refuses %s with a 422 naming the field, and opens no session', async (_case, form, field, message) => {
    const user = await t.register();
    const values = { EMAIL: user.email, PASSWORD: user.password, REFRESH: user.refresh } as Record<string, string>;
    const body = Object.fromEntries(Object.entries(form).map(([key, value]) => [key, values[value] ?? value]));
    const res = await t.post('/api/auth/login', body, { form: true });
    expectError(res, 422, 'VALIDATION_ERROR');
    expect(res.body.error.details).toEqual([{ field, message }]);
    const sessions = await t.db.selectFrom('sessions').select(['id', 'revoked_at']).where('user_id', '=', user.id).execute();
    expect(sessions).toEqual([{ id: sidOf(user.refresh), revoked_at: null }]);
  });
});

describe('the token URL takes multipart/form-data too, as some generated clients send every form', () => {
  it('signs in with a multipart password grant', async () => {
    const user = await t.register();
    const res = await request(t.app.koa.callback()).post('/api/auth/login').field('username', user.email).field('password', user.password);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ success: true, token_type: 'bearer' });
    expect((await session(sidOf(res.body.refresh_token))).user_id).toBe(user.id);
  });

  it('refuses a file in a multipart body with 400 BAD_REQUEST and signs nobody in', async () => {
    const user = await t.register();
    const res = await request(t.app.koa.callback())
      .post('/api/auth/login')
      .field('username', user.email)
      .attach('password', Buffer.from(user.password), 'password.txt');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, error: { code: 'BAD_REQUEST', message: 'Files are not accepted' } });
    expect(await t.db.selectFrom('sessions').select('id').where('user_id', '=', user.id).execute()).toHaveLength(1);
  });

  it('answers 413 to a multipart body over the limit', async () => {
    const res = await request(t.app.koa.callback())
      .post('/api/auth/login')
      .field('username', 'x'.repeat(t.config.server.maxBodyBytes))
      .field('password', 'p');
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });
});
