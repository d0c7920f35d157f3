import { Secret, TOTP } from 'otpauth';
import request from 'supertest';
import { startTestApp, type Response, type TestContext } from './support/app.js';
import { auditRows, auditTable as audit } from './support/audit.js';
import { expectError, expectUnauthorized } from './support/expect.js';
import { claimsOf } from './support/jwt.js';

// TOTP codes are read against a clock the suite holds: codes for other time steps are computed
// with the suite's own otpauth instance, and the mfa_token's lifetime passes by moving the clock.
const STEP_MS = 30_000;
/** The middle of a time step, so that "now" and its neighbours are unambiguous. */
const midStep = (ms: number) => Math.floor(ms / STEP_MS) * STEP_MS + STEP_MS / 2;
let clock = midStep(Date.now());

const codeFor = (secret: string, atMs = clock) =>
  new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: atMs });
/** A code that is not the current one. */
const wrongCodeFor = (secret: string) => (codeFor(secret) === '000000' ? '111111' : '000000');

interface Enrolled {
  id: number;
  email: string;
  password: string;
  access: string;
  refresh: string;
  secret: string;
  factorId: number;
  recoveryCodes: string[];
}

function suite(t: () => TestContext) {
  async function enrol(): Promise<Enrolled> {
    const user = await t().register();
    const api = t().clientFor(user.access);
    const started = await api.POST('/api/auth/mfa/totp', { body: { name: 'Phone' } });
    expect(started.response.status).toBe(201);
    const { factor_id: factorId, secret } = started.data!.data;
    const confirmed = await api.POST('/api/auth/mfa/totp/{id}/confirm', {
      params: { path: { id: factorId } },
      body: { code: codeFor(secret) },
    });
    expect(confirmed.response.status).toBe(200);
    return { ...user, secret, factorId, recoveryCodes: confirmed.data!.data.recovery_codes! };
  }

  async function mfaToken(user: { email: string; password: string }): Promise<string> {
    const res = await t().post('/api/auth/login/json', { email: user.email, password: user.password });
    expectError(res, 403, 'MFA_REQUIRED');
    return res.body.error.mfa_token;
  }

  const verify = (body: Record<string, unknown>): Promise<Response> => t().post('/api/auth/mfa/verify', body);

  beforeEach(() => {
    clock = midStep(Date.now());
  });

  describe('TOTP enrolment', () => {
    it('answers a secret and an otpauth URL with issuer, account and secret; the factor waits for a code', async () => {
      const user = await t().register();
      const res = await t().post('/api/auth/mfa/totp', { name: 'Phone' }, { token: user.access });
      expect(res.status).toBe(201);
      const { factor_id, secret, otpauth_url } = res.body.data;
      expect(secret).toMatch(/^[A-Z2-7]{32}$/);
      const url = new URL(otpauth_url);
      expect(url.protocol).toBe('otpauth:');
      expect(url.host).toBe('totp');
      expect(decodeURIComponent(url.pathname)).toBe(`/Account Service:${user.email}`);
      expect(Object.fromEntries(url.searchParams)).toEqual({
        issuer: 'Account Service',
        secret,
        algorithm: 'SHA1',
        digits: '6',
        period: '30',
      });

      // Sealed at rest: the row holds neither the secret nor anything that decodes to it in clear.
      const row = await t().db.selectFrom('mfa_factors').selectAll().where('id', '=', factor_id).executeTakeFirstOrThrow();
      expect(row.confirmed_at).toBeNull();
      expect(row.totp_secret_sealed).not.toContain(secret);
      expect(Buffer.from(row.totp_secret_sealed!.replace(/\./g, ''), 'base64url').toString('latin1')).not.toContain(secret);

      // Pending, it is not listed and does not protect the account.
      const list = await t().get('/api/auth/mfa/factors', { token: user.access });
      expect(list.body).toEqual({ success: true, data: [], meta: { recovery_codes_remaining: 0 } });
      expect((await t().post('/api/auth/login/json', { email: user.email, password: user.password })).status).toBe(200);
    });

    it('confirms with a current code, answers ten recovery codes once, and lists the factor', async () => {
      const user = await t().register();
      const started = await t().post('/api/auth/mfa/totp', {}, { token: user.access });
      const { factor_id, secret } = started.body.data;
      expectError(
        await t().post(`/api/auth/mfa/totp/${factor_id}/confirm`, { code: codeFor(secret, clock + 2 * STEP_MS) }, { token: user.access }),
        400,
        'INVALID_CODE',
      );

      const res = await t().post(`/api/auth/mfa/totp/${factor_id}/confirm`, { code: codeFor(secret) }, { token: user.access });
      expect(res.status).toBe(200);
      expect(res.body.data.factor).toMatchObject({ id: factor_id, type: 'totp', name: 'Authenticator app' });
      const codes: string[] = res.body.data.recovery_codes;
      expect(codes).toHaveLength(10);
      expect(new Set(codes).size).toBe(10);
      // Stored only as hashes.
      const stored = await t().db.selectFrom('mfa_recovery_codes').select('code_hash').where('user_id', '=', user.id).execute();
      expect(stored).toHaveLength(10);
      for (const code of codes) expect(JSON.stringify(stored)).not.toContain(code.replace(/-/g, ''));

      const list = await t().get('/api/auth/mfa/factors', { token: user.access });
      expect(list.body.data).toEqual([res.body.data.factor]);
      expect(list.body.meta).toEqual({ recovery_codes_remaining: 10 });
      expectError(
        await t().post(`/api/auth/mfa/totp/${factor_id}/confirm`, { code: codeFor(secret) }, { token: user.access }),
        409,
        'CONFLICT',
      );

      // A second app is not the first factor: no new codes.
      const second = await t().post('/api/auth/mfa/totp', { name: 'Tablet' }, { token: user.access });
      const confirmed = await t().post(
        `/api/auth/mfa/totp/${second.body.data.factor_id}/confirm`,
        { code: codeFor(second.body.data.secret) },
        { token: user.access },
      );
      expect(confirmed.status).toBe(200);
      expect(confirmed.body.data).not.toHaveProperty('recovery_codes');
      expect((await auditRows(t(), user.id, 'mfa.factor_added')).map((r) => r.details.first)).toEqual([true, false]);
    });

    it("refuses another user's factor with 404 and a malformed code with 422", async () => {
      const owner = await t().register();
      const other = await t().register();
      const started = await t().post('/api/auth/mfa/totp', {}, { token: owner.access });
      expectError(
        await t().post(
          `/api/auth/mfa/totp/${started.body.data.factor_id}/confirm`,
          { code: codeFor(started.body.data.secret) },
          { token: other.access },
        ),
        404,
        'NOT_FOUND',
      );
      expectError(
        await t().post(`/api/auth/mfa/totp/${started.body.data.factor_id}/confirm`, { code: '12345' }, { token: owner.access }),
        422,
        'VALIDATION_ERROR',
      );
    });

    it('revokes every other session of the user on the first factor and raises this one to aal2', async () => {
      const user = await t().register();
      const elsewhere = await t().client.POST('/api/auth/login/json', { body: { email: user.email, password: user.password } });
      const other = elsewhere.data!.data;
      expect(claimsOf(user.access)).toMatchObject({ amr: ['pwd'], aal: 'aal1' });

      const started = await t().post('/api/auth/mfa/totp', {}, { token: user.access });
      expect(
        (
          await t().post(
            `/api/auth/mfa/totp/${started.body.data.factor_id}/confirm`,
            { code: codeFor(started.body.data.secret) },
            { token: user.access },
          )
        ).status,
      ).toBe(200);

      expectUnauthorized(await t().get('/api/auth/me', { token: other.access_token }));
      expectUnauthorized(await t().post('/api/auth/refresh', { refresh_token: other.refresh_token }));
      const session = await t()
        .db.selectFrom('sessions')
        .select(['amr', 'aal', 'revoked_at'])
        .where('id', '=', claimsOf(user.access).sid)
        .executeTakeFirstOrThrow();
      expect(session).toEqual({ amr: ['pwd', 'otp', 'mfa'], aal: 'aal2', revoked_at: null });
      const refreshed = await t().post('/api/auth/refresh', { refresh_token: user.refresh });
      expect(refreshed.status).toBe(200);
      expect(claimsOf(refreshed.body.data.access_token)).toMatchObject({ amr: ['pwd', 'otp', 'mfa'], aal: 'aal2' });
    });
  });

  describe('password login of a user with a factor', () => {
    it('answers 403 MFA_REQUIRED with an mfa_token and the methods, and opens no session', async () => {
      const user = await enrol();
      const sessionsBefore = await t().db.selectFrom('sessions').select('id').where('user_id', '=', user.id).execute();
      const res = await t().post('/api/auth/login/json', { email: user.email, password: user.password });
      expectError(res, 403, 'MFA_REQUIRED');
      expect(res.body.error).toEqual({
        code: 'MFA_REQUIRED',
        message: 'A second factor is required',
        mfa_token: expect.any(String),
        methods: ['totp', 'recovery_code'],
      });
      const form = await t().post('/api/auth/login', { username: user.email, password: user.password }, { form: true });
      expectError(form, 403, 'MFA_REQUIRED');
      expect(form.body).not.toHaveProperty('access_token');
      expect(await t().db.selectFrom('sessions').select('id').where('user_id', '=', user.id).execute()).toEqual(sessionsBefore);
      // A wrong password is still the plain 401.
      expectError(await t().post('/api/auth/login/json', { email: user.email, password: 'wrong-password' }), 401, 'INVALID_CREDENTIALS');
    });

    it('verifies a current code and answers the login body with amr and aal in the access token', async () => {
      const user = await enrol();
      clock += STEP_MS;
      const { data, response } = await t().client.POST('/api/auth/mfa/verify', {
        body: { mfa_token: await mfaToken(user), method: 'totp', code: codeFor(user.secret) },
      });
      expect(response.status).toBe(200);
      expect(data!.data.user.email).toBe(user.email);
      expect(claimsOf(data!.data.access_token)).toMatchObject({ sub: String(user.id), amr: ['pwd', 'otp', 'mfa'], aal: 'aal2' });
      expect((await t().get('/api/auth/me', { token: data!.data.access_token })).status).toBe(200);
      const refreshed = await t().post('/api/auth/refresh', { refresh_token: data!.data.refresh_token });
      expect(claimsOf(refreshed.body.data.access_token)).toMatchObject({ amr: ['pwd', 'otp', 'mfa'], aal: 'aal2' });
      const [verified] = await auditRows(t(), user.id, 'mfa.verified');
      expect(verified.details).toMatchObject({ method: 'totp', factor_id: user.factorId });
    });

    it('accepts a code one step behind or ahead of the clock, and refuses two steps off', async () => {
      const user = await enrol();
      for (const offset of [-2, 2]) {
        clock += 4 * STEP_MS;
        expectError(
          await verify({ mfa_token: await mfaToken(user), method: 'totp', code: codeFor(user.secret, clock + offset * STEP_MS) }),
          400,
          'INVALID_CODE',
        );
      }
      clock += 4 * STEP_MS;
      expect((await verify({ mfa_token: await mfaToken(user), method: 'totp', code: codeFor(user.secret, clock - STEP_MS) })).status).toBe(
        200,
      );
      clock += 4 * STEP_MS;
      expect((await verify({ mfa_token: await mfaToken(user), method: 'totp', code: codeFor(user.secret, clock + STEP_MS) })).status).toBe(
        200,
      );
    });

    it('takes a code once, and no older code after it', async () => {
      const user = await enrol();
      clock += 4 * STEP_MS;
      const code = codeFor(user.secret);
      expect((await verify({ mfa_token: await mfaToken(user), method: 'totp', code })).status).toBe(200);
      expectError(await verify({ mfa_token: await mfaToken(user), method: 'totp', code }), 400, 'INVALID_CODE');
      // The previous step is within the drift window, but older than the step already taken.
      expectError(
        await verify({ mfa_token: await mfaToken(user), method: 'totp', code: codeFor(user.secret, clock - STEP_MS) }),
        400,
        'INVALID_CODE',
      );
      // Two requests with one fresh code: one signs in.
      clock += STEP_MS;
      const fresh = codeFor(user.secret);
      const answers = await Promise.all(
        [mfaToken(user), mfaToken(user)].map(async (token) => verify({ mfa_token: await token, method: 'totp', code: fresh })),
      );
      expect(answers.map((r) => r.status).sort()).toEqual([200, 400]);
    });

    it('takes each recovery code once, and a new set voids the old one', async () => {
      const user = await enrol();
      const [first, second] = user.recoveryCodes;
      const res = await verify({ mfa_token: await mfaToken(user), method: 'recovery_code', code: first.toLowerCase().replace(/-/g, ' ') });
      expect(res.status).toBe(200);
      expect(claimsOf(res.body.data.access_token)).toMatchObject({ amr: ['pwd', 'otp', 'mfa'], aal: 'aal2' });
      expectError(await verify({ mfa_token: await mfaToken(user), method: 'recovery_code', code: first }), 400, 'INVALID_CODE');
      const [used] = await auditRows(t(), user.id, 'mfa.recovery_code_used');
      expect(used.details).toEqual({ remaining: 9 });
      expect((await t().get('/api/auth/mfa/factors', { token: res.body.data.access_token })).body.meta).toEqual({
        recovery_codes_remaining: 9,
      });

      const renewed = await t().clientFor(res.body.data.access_token).POST('/api/auth/mfa/recovery-codes');
      expect(renewed.response.status).toBe(200);
      const fresh = renewed.data!.data.recovery_codes;
      expect(fresh).toHaveLength(10);
      expectError(await verify({ mfa_token: await mfaToken(user), method: 'recovery_code', code: second }), 400, 'INVALID_CODE');
      expect((await verify({ mfa_token: await mfaToken(user), method: 'recovery_code', code: fresh[0] })).status).toBe(200);
    });

    it('voids the mfa_token at the fifth wrong code', async () => {
      const user = await enrol();
      const token = await mfaToken(user);
      for (let i = 0; i < 5; i++)
        expectError(await verify({ mfa_token: token, method: 'totp', code: wrongCodeFor(user.secret) }), 400, 'INVALID_CODE');
      expectUnauthorized(await verify({ mfa_token: token, method: 'totp', code: codeFor(user.secret) }));
      expect((await auditRows(t(), user.id, 'mfa.failed')).map((r) => r.details.failures)).toEqual([1, 2, 3, 4, 5]);
    });

    it('answers 401 to an expired or used mfa_token, and to an unknown one', async () => {
      const user = await enrol();
      const expiring = await mfaToken(user);
      clock += 5 * 60 * 1000 + 1000;
      expectUnauthorized(await verify({ mfa_token: expiring, method: 'totp', code: codeFor(user.secret) }));

      const token = await mfaToken(user);
      expect((await verify({ mfa_token: token, method: 'recovery_code', code: user.recoveryCodes[0] })).status).toBe(200);
      expectUnauthorized(await verify({ mfa_token: token, method: 'recovery_code', code: user.recoveryCodes[1] }));
      expectUnauthorized(await verify({ mfa_token: 'not-a-token', method: 'totp', code: '123456' }));
      expectUnauthorized(await t().post('/api/auth/mfa/webauthn/options', { mfa_token: token }));
    });

    it('asks for the code or credential its method needs', async () => {
      const user = await enrol();
      const res = await verify({ mfa_token: await mfaToken(user), method: 'totp' });
      expectError(res, 422, 'VALIDATION_ERROR');
      expect(res.body.error.details).toEqual([{ field: 'body.code', message: 'is required with method totp' }]);
      const passkey = await verify({ mfa_token: await mfaToken(user), method: 'webauthn' });
      expect(passkey.body.error.details).toEqual([{ field: 'body.credential', message: 'is required with method webauthn' }]);
    });
  });

  describe('removing factors', () => {
    it('removes a factor; the last one takes the recovery codes, and password logins open sessions again', async () => {
      const user = await enrol();
      const other = await t().register();
      expectError(await t().delete(`/api/auth/mfa/factors/${user.factorId}`, { token: other.access }), 404, 'NOT_FOUND');
      const del = await t()
        .clientFor(user.access)
        .DELETE('/api/auth/mfa/factors/{id}', { params: { path: { id: user.factorId } } });
      expect(del.response.status).toBe(204);
      expectError(await t().delete(`/api/auth/mfa/factors/${user.factorId}`, { token: user.access }), 404, 'NOT_FOUND');
      expect(await t().db.selectFrom('mfa_recovery_codes').select('id').where('user_id', '=', user.id).execute()).toEqual([]);
      expect((await t().get('/api/auth/mfa/factors', { token: user.access })).body).toEqual({
        success: true,
        data: [],
        meta: { recovery_codes_remaining: 0 },
      });
      const login = await t().post('/api/auth/login/json', { email: user.email, password: user.password });
      expect(login.status).toBe(200);
      expect(claimsOf(login.body.data.access_token)).toMatchObject({ amr: ['pwd'], aal: 'aal1' });
      expectError(await t().post('/api/auth/mfa/recovery-codes', undefined, { token: user.access }), 409, 'CONFLICT');
      const [removed] = await auditRows(t(), user.id, 'mfa.factor_removed');
      expect(removed.details).toEqual({ factor_id: user.factorId, type: 'totp', factors_left: 0 });
    });

    it("lets an admin reset a user's factors, audited; others get 403", async () => {
      const user = await enrol();
      const stranger = await t().register();
      expectError(await t().delete(`/api/users/${user.id}/mfa`, { token: stranger.access }), 403, 'FORBIDDEN');
      const pending = await mfaToken(user);
      const admin = await t().adminToken();
      expectError(await t().delete('/api/users/2147483647/mfa', { token: admin }), 404, 'NOT_FOUND');
      const res = await t()
        .clientFor(admin)
        .DELETE('/api/users/{id}/mfa', { params: { path: { id: user.id } } });
      expect(res.response.status).toBe(204);
      expect(await t().db.selectFrom('mfa_factors').select('id').where('user_id', '=', user.id).execute()).toEqual([]);
      expect(await t().db.selectFrom('mfa_recovery_codes').select('id').where('user_id', '=', user.id).execute()).toEqual([]);
      expectUnauthorized(await verify({ mfa_token: pending, method: 'recovery_code', code: user.recoveryCodes[0] }));
      const [reset] = await auditRows(t(), user.id, 'mfa.reset');
      expect(reset.actor_user_id).toBe(Number(claimsOf(admin).sub));
      expect(reset.details).toEqual({ factors_removed: 1 });
      expect((await t().post('/api/auth/login/json', { email: user.email, password: user.password })).status).toBe(200);
    });
  });

  it('records every step without a secret, a code or a token in the audit trail', async () => {
    const user = await enrol();
    const token = await mfaToken(user);
    await verify({ mfa_token: token, method: 'totp', code: wrongCodeFor(user.secret) });
    await verify({ mfa_token: token, method: 'recovery_code', code: user.recoveryCodes[3] });
    const rows = await audit(t())
      .selectFrom('audit_events')
      .select(['event_type', 'details'])
      .where('subject_user_id', '=', user.id)
      .orderBy('id')
      .execute();
    expect(rows.map((r) => r.event_type)).toEqual([
      'user.registered',
      'mfa.totp_enrolment_started',
      'mfa.factor_added',
      'mfa.recovery_codes_generated',
      'mfa.challenged',
      'mfa.failed',
      'mfa.recovery_code_used',
      'mfa.verified',
      'login.succeeded',
    ]);
    const text = JSON.stringify(rows);
    for (const secret of [user.secret, token, ...user.recoveryCodes]) expect(text).not.toContain(secret);
  });

  it('counts second-factor events in the metrics', async () => {
    const user = await enrol();
    await verify({ mfa_token: await mfaToken(user), method: 'recovery_code', code: user.recoveryCodes[0] });
    const metrics = await request(t().app.koa.callback()).get('/metrics');
    expect(metrics.text).toMatch(/^auth_events_total\{event_type="mfa\.verified"\} [1-9]/m);
    expect(metrics.text).toMatch(/^auth_events_total\{event_type="mfa\.factor_added"\} [1-9]/m);
    expect(metrics.text).toMatch(/^auth_events_total\{event_type="mfa\.reset"\} \d/m);
  });

  it('clears expired login steps and passkey challenges as new ones are made, and keeps live ones', async () => {
    const challenges = () =>
      t().db.selectFrom('mfa_challenges').select('challenge').where('challenge', 'like', 'clear:%').orderBy('challenge');
    const add = (label: string, expiresAt: number) =>
      t()
        .db.insertInto('mfa_challenges')
        .values({ id: crypto.randomUUID(), purpose: 'passkey_login', user_id: null, challenge: label, expires_at: new Date(expiresAt) })
        .execute();
    await add('clear:expired', clock - 1000);
    await add('clear:expired-long-ago', clock - 25 * 3600_000);
    await add('clear:live', clock + 60_000);

    // An unauthenticated passkey sign-in makes a challenge: anyone can, so each one clears away expired ones.
    expect((await t().post('/api/auth/passkeys/login/options', {})).status).toBe(200);
    expect(await challenges().execute()).toEqual([{ challenge: 'clear:live' }]);

    await add('clear:expired-again', clock - 1000);
    await mfaToken(await enrol());
    expect(await challenges().execute()).toEqual([{ challenge: 'clear:live' }]);
  });

  it('says in the tokens of a password alone how they were signed in: amr pwd and aal1, as the session records', async () => {
    const user = await t().register();
    const res = await t().post('/api/auth/login/json', { email: user.email, password: user.password });
    expect(res.status).toBe(200);
    const claims = claimsOf(res.body.data.access_token);
    expect(claims).toMatchObject({ amr: ['pwd'], aal: 'aal1' });
    const session = await t().db.selectFrom('sessions').select(['amr', 'aal']).where('id', '=', claims.sid).executeTakeFirstOrThrow();
    expect(session).toEqual({ amr: ['pwd'], aal: 'aal1' });
  });
}

describe('second factors', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await startTestApp({}, { clock: () => clock });
  });
  afterAll(() => t?.close());
  suite(() => t);
});

describe('second factors and the login lockout', () => {
  const MAX_FAILURES = 3;
  let t: TestContext;
  beforeAll(async () => {
    t = await startTestApp(
      {
        RATE_LIMIT_ENABLED: 'true',
        AUTH_RATE_LIMIT_PER_MINUTE: '100000',
        RATE_LIMIT_PER_MINUTE: '100000',
        LOGIN_MAX_FAILURES: String(MAX_FAILURES),
      },
      { clock: () => clock },
    );
  });
  afterAll(() => t?.close());

  it('counts wrong codes as failed logins: the account is locked for the client, the password login too', async () => {
    clock = midStep(Date.now());
    const user = await t.register();
    const started = await t.post('/api/auth/mfa/totp', {}, { token: user.access });
    const secret: string = started.body.data.secret;
    await t.post(`/api/auth/mfa/totp/${started.body.data.factor_id}/confirm`, { code: codeFor(secret) }, { token: user.access });
    clock += 4 * STEP_MS;
    const login = await t.post('/api/auth/login/json', { email: user.email, password: user.password });
    const token = login.body.error.mfa_token;
    const wrong = wrongCodeFor(secret);
    for (let i = 0; i < MAX_FAILURES; i++)
      expectError(await t.post('/api/auth/mfa/verify', { mfa_token: token, method: 'totp', code: wrong }), 400, 'INVALID_CODE');
    expectError(await t.post('/api/auth/mfa/verify', { mfa_token: token, method: 'totp', code: codeFor(secret) }), 429, 'RATE_LIMITED');
    expectError(await t.post('/api/auth/login/json', { email: user.email, password: user.password }), 429, 'RATE_LIMITED');
    const locked = await audit(t)
      .selectFrom('audit_events')
      .select('details')
      .where('subject_user_id', '=', user.id)
      .where('event_type', '=', 'login.locked')
      .execute();
    expect(locked).toEqual([{ details: { scope: 'client' } }]);
  });

  async function enrolled() {
    const user = await t.register();
    const started = await t.post('/api/auth/mfa/totp', {}, { token: user.access });
    const secret: string = started.body.data.secret;
    await t.post(`/api/auth/mfa/totp/${started.body.data.factor_id}/confirm`, { code: codeFor(secret) }, { token: user.access });
    clock += 4 * STEP_MS;
    const mfaToken = async () => {
      const login = await t.post('/api/auth/login/json', { email: user.email, password: user.password });
      expectError(login, 403, 'MFA_REQUIRED');
      return login.body.error.mfa_token as string;
    };
    const wrong = (token: string) => t.post('/api/auth/mfa/verify', { mfa_token: token, method: 'totp', code: wrongCodeFor(secret) });
    return { user, secret, mfaToken, wrong };
  }

  it('does not start the count again when the password is re-entered between guessed codes', async () => {
    clock = midStep(Date.now());
    const { user, mfaToken, wrong } = await enrolled();
    // Password, two wrong codes; password again (not locked yet), and the next wrong code is the last.
    let token = await mfaToken();
    for (let i = 0; i < MAX_FAILURES - 1; i++) expectError(await wrong(token), 400, 'INVALID_CODE');
    token = await mfaToken();
    expectError(await wrong(token), 400, 'INVALID_CODE');
    expectError(await wrong(token), 429, 'RATE_LIMITED');
    expectError(await t.post('/api/auth/login/json', { email: user.email, password: user.password }), 429, 'RATE_LIMITED');
  });

  it('starts the count again once a second factor completes the sign-in', async () => {
    clock = midStep(Date.now());
    const { secret, mfaToken, wrong } = await enrolled();
    let token = await mfaToken();
    for (let i = 0; i < MAX_FAILURES - 1; i++) expectError(await wrong(token), 400, 'INVALID_CODE');
    const verified = await t.post('/api/auth/mfa/verify', { mfa_token: token, method: 'totp', code: codeFor(secret) });
    expect(verified.status).toBe(200);
    clock += STEP_MS;
    token = await mfaToken();
    for (let i = 0; i < MAX_FAILURES - 1; i++) expectError(await wrong(token), 400, 'INVALID_CODE');
    expect((await t.post('/api/auth/mfa/verify', { mfa_token: token, method: 'totp', code: codeFor(secret) })).status).toBe(200);
  });
});
