import { createHash, randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { startTestApp, uniqueEmail, type Response, type TestContext } from './support/app.js';
import { expectError, expectJson, expectUnauthorized } from './support/expect.js';
import { freePort } from './support/net.js';
import { linkToken, startSmtpServer, type ReceivedMail, type TestSmtpServer } from './support/smtp.js';
import { until } from './support/wait.js';

const APP_URL = 'https://app.example.test';
const MAIL_ENV = { APP_URL, MAIL_POLL_INTERVAL_MS: '100', MAIL_RETRY_BASE_MS: '200' };

let smtp: TestSmtpServer;
let t: TestContext;
beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestApp({ ...MAIL_ENV, SMTP_URL: smtp.url });
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
});

// ---------------------------------------------------------------------------------------------
// Helpers

const VERIFY_SUBJECT = 'Confirm your e-mail address';
const RESET_SUBJECT = 'Reset your password';
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

const INVALID_TOKEN_BODY = { success: false, error: { code: 'INVALID_TOKEN', message: 'Invalid or expired token' } };
const INVALID_CREDENTIALS_BODY = { success: false, error: { code: 'INVALID_CREDENTIALS', message: 'Invalid email or password' } };
const FORGOT_BODY = { success: true, data: { message: 'If the account exists, a reset link has been sent' } };
const RESET_BODY = { success: true, data: { message: 'Password has been reset; sign in with the new password' } };

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex');
const sidOf = (token: string) => (jwt.decode(token) as { sid: string }).sid;

const mailsTo = (server: TestSmtpServer, address: string, subject: string) => server.to(address).filter((m) => m.subject === subject);

/** The n-th (1-based) message with this subject to this address, waiting for it to arrive. */
function nthMail(server: TestSmtpServer, address: string, subject: string, n = 1, timeoutMs = 10_000): Promise<ReceivedMail> {
  return until(() => mailsTo(server, address, subject)[n - 1], `mail #${n} "${subject}" to ${address}`, timeoutMs);
}

function expectInvalidToken(res: Response): void {
  expect(res.status).toBe(400);
  expect(res.body).toEqual(INVALID_TOKEN_BODY);
  expectJson(res);
}

function expectValidation(res: Response, fields: string[]): void {
  expectError(res, 422, 'VALIDATION_ERROR');
  const details = res.body.error.details as { field: string; message: string }[];
  expect([...new Set(details.map((d) => d.field))].sort()).toEqual([...fields].sort());
}

const me = (token: string, app = t) => app.get('/api/auth/me', { token });
const refresh = (token: string, app = t) => app.post('/api/auth/refresh', { refresh_token: token });
const loginJson = (email: string, password: string, headers?: Record<string, string>, app = t) =>
  app.post('/api/auth/login/json', { email, password }, headers ? { headers } : {});
const verify = (token: string, app = t) => app.post('/api/auth/verify-email', { token });
const forgot = (email: string, app = t) => app.post('/api/auth/forgot-password', { email });
const reset = (token: string, newPassword: string, app = t) => app.post('/api/auth/reset-password', { token, new_password: newPassword });

const userRow = (id: number, app = t) => app.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const tokenRows = (userId: number, purpose: 'password_reset' | 'email_verification', app = t) =>
  app.db.selectFrom('account_tokens').selectAll().where('user_id', '=', userId).where('purpose', '=', purpose).orderBy('id').execute();
const outboxRows = (recipient: string, app = t) =>
  app.db.selectFrom('mail_outbox').selectAll().where('recipient', '=', recipient).orderBy('id').execute();
const expireToken = async (token: string, app = t) => {
  const updated = await app.db
    .updateTable('account_tokens')
    .set({ expires_at: new Date(Date.now() - 60_000) })
    .where('token_hash', '=', sha256(token))
    .executeTakeFirst();
  expect(Number(updated.numUpdatedRows)).toBe(1);
};

/**
 * Waits until every outbox row for the recipient is marked sent. A row is marked sent only after the
 * mail server accepted it, and a sent row is never claimed again, so from then on what the mail
 * server holds for the recipient is final.
 */
const allSent = (recipient: string, app = t) =>
  until(async () => {
    const rows = await outboxRows(recipient, app);
    return rows.length > 0 && rows.every((r) => r.sent_at !== null) && rows;
  }, `outbox rows for ${recipient} marked sent`);

/** Asserts a message has a text and an HTML part, each with the link, the lifetime and the not-you line. */
function expectMailParts(mail: ReceivedMail, link: string, lifetime: string, notYou: RegExp): void {
  for (const part of [mail.text, mail.html]) {
    expect(part).toContain(link);
    expect(part).toContain(lifetime);
    expect(part).toMatch(notYou);
  }
  expect(mail.html).toMatch(/<html/i);
  expect(mail.html).toContain(`href="${link}"`);
}

// ---------------------------------------------------------------------------------------------

describe('e-mail verification', () => {
  it('registration mails a verification link; only its SHA-256 is stored and the outbox keeps nothing once sent', async () => {
    const email = uniqueEmail('verify');
    const res = await t.post('/api/auth/register', { email, password: 'password-123', name: 'Ada Lovelace' });
    expect(res.status).toBe(201);
    const userId = res.body.data.user.id as number;
    expect(res.body.data.user.email_verified).toBe(false);

    const mail = await nthMail(smtp, email, VERIFY_SUBJECT);
    expect(mail.to).toEqual([email]);
    const token = linkToken(mail, 'verify-email');
    expect(token).toMatch(TOKEN_SHAPE);
    expect(Buffer.from(token, 'base64url')).toHaveLength(32);
    expectMailParts(mail, `${APP_URL}/verify-email?token=${token}`, '24 hours', /if you did not/i);
    expect(mail.text).toContain('Ada Lovelace');

    // One token row, holding the hash of the mailed token and never the token itself.
    const tokens = await tokenRows(userId, 'email_verification');
    expect(tokens).toHaveLength(1);
    const [row] = tokens;
    expect(row.token_hash).toBe(sha256(token));
    expect(row.email).toBe(email);
    expect(row.used_at).toBeNull();
    const lifetime = new Date(row.expires_at).getTime() - new Date(row.created_at).getTime();
    expect(Math.abs(lifetime - 24 * 3600_000)).toBeLessThan(60_000);
    expect(JSON.stringify(row)).not.toContain(token);
    expect(await t.db.selectFrom('account_tokens').selectAll().where('token_hash', '=', token).execute()).toEqual([]);

    // The outbox row is marked sent and its content erased.
    const [sent] = await allSent(email);
    expect(sent).toMatchObject({
      recipient: email,
      subject: VERIFY_SUBJECT,
      payload: null,
      attempts: 1,
      last_error: null,
      failed_at: null,
    });
    expect(sent.sent_at).not.toBeNull();
    expect(JSON.stringify(await t.db.selectFrom('mail_outbox').selectAll().execute())).not.toContain(token);

    // The link verifies the address.
    const ok = await verify(token);
    expect(ok.status).toBe(200);
    expectJson(ok);
    expect(ok.body).toEqual({
      success: true,
      data: {
        id: userId,
        email,
        name: 'Ada Lovelace',
        role: 'user',
        is_active: true,
        email_verified: true,
        pending_email: null,
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      },
    });
    expect((await userRow(userId)).email_verified).toBe(true);
    expect((await tokenRows(userId, 'email_verification'))[0].used_at).not.toBeNull();
    expect((await me(res.body.data.access_token)).body.data.email_verified).toBe(true);

    // Single use.
    expectInvalidToken(await verify(token));
  });

  it('an unknown token and an expired token answer 400 INVALID_TOKEN with the same message', async () => {
    expectInvalidToken(await verify(randomBytes(32).toString('base64url')));
    expectInvalidToken(await verify('not-a-token'));

    const u = await t.register();
    const token = linkToken(await nthMail(smtp, u.email, VERIFY_SUBJECT), 'verify-email');
    await expireToken(token);
    expectInvalidToken(await verify(token));
    expect((await userRow(u.id)).email_verified).toBe(false);
  });

  it('a token of one purpose does not work for the other', async () => {
    const u = await t.register();
    const verifyToken = linkToken(await nthMail(smtp, u.email, VERIFY_SUBJECT), 'verify-email');
    expect((await forgot(u.email)).status).toBe(200);
    const resetToken = linkToken(await nthMail(smtp, u.email, RESET_SUBJECT), 'reset-password');

    expectInvalidToken(await reset(verifyToken, 'another-password-1'));
    expectInvalidToken(await verify(resetToken));
    // Neither was consumed by the wrong use.
    expect((await verify(verifyToken)).status).toBe(200);
    expect((await reset(resetToken, 'another-password-1')).status).toBe(200);
  });

  it('an empty or missing token is a 422', async () => {
    expectValidation(await t.post('/api/auth/verify-email', { token: '' }), ['body.token']);
    expectValidation(await t.post('/api/auth/verify-email', {}), ['body.token']);
  });
});

describe('POST /api/auth/verify-email/resend', () => {
  it('mails a new link that voids the earlier one; once verified, resend is a 409', async () => {
    const u = await t.register();
    const first = linkToken(await nthMail(smtp, u.email, VERIFY_SUBJECT, 1), 'verify-email');

    const res = await t.post('/api/auth/verify-email/resend', undefined, { token: u.access });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, data: { message: 'Verification e-mail sent' } });
    const second = linkToken(await nthMail(smtp, u.email, VERIFY_SUBJECT, 2), 'verify-email');
    expect(second).not.toBe(first);
    expect(second).toMatch(TOKEN_SHAPE);

    const rows = await tokenRows(u.id, 'email_verification');
    expect(rows.map((r) => r.token_hash)).toEqual([sha256(first), sha256(second)]);
    expect(rows[0].used_at).not.toBeNull(); // voided by the new one
    expect(rows[1].used_at).toBeNull();

    expectInvalidToken(await verify(first));
    const ok = await verify(second);
    expect(ok.status).toBe(200);
    expect(ok.body.data.email_verified).toBe(true);

    const again = await t.post('/api/auth/verify-email/resend', undefined, { token: u.access });
    expectError(again, 409, 'CONFLICT');
    await allSent(u.email);
    expect(mailsTo(smtp, u.email, VERIFY_SUBJECT)).toHaveLength(2);
  });

  it('needs a bearer token', async () => {
    expectUnauthorized(await t.post('/api/auth/verify-email/resend'));
  });
});

describe('changing the e-mail with PUT /api/users/{id}', () => {
  // An admin's change to another user applies at once; a user's own stays pending (test/credentials.test.ts).
  it("an admin's change clears email_verified, mails the new address, and voids links for the old one", async () => {
    const admin = await t.adminToken();
    const u = await t.register();
    const original = linkToken(await nthMail(smtp, u.email, VERIFY_SUBJECT), 'verify-email');

    // First change: the original link (unused) is void from now on; the new address is verified.
    const first = uniqueEmail('first');
    const put1 = await t.put(`/api/users/${u.id}`, { email: first }, { token: admin });
    expect(put1.status).toBe(200);
    expect(put1.body.data).toMatchObject({ id: u.id, email: first, email_verified: false });
    const firstToken = linkToken(await nthMail(smtp, first, VERIFY_SUBJECT), 'verify-email');
    expect((await verify(firstToken)).body.data).toMatchObject({ email: first, email_verified: true });

    // The same address in another case is not a change: still verified, no mail.
    const same = await t.put(`/api/users/${u.id}`, { email: first.toUpperCase() }, { token: admin });
    expect(same.status).toBe(200);
    expect(same.body.data).toMatchObject({ email: first, email_verified: true });

    // Second change, from a verified address: the flag is cleared and the new address gets the link.
    const second = uniqueEmail('second');
    const put2 = await t.put(`/api/users/${u.id}`, { email: second }, { token: admin });
    expect(put2.status).toBe(200);
    expect(put2.body.data).toMatchObject({ id: u.id, email: second, email_verified: false });
    expect(await userRow(u.id)).toMatchObject({ email: second, email_verified: false });
    const mail = await nthMail(smtp, second, VERIFY_SUBJECT);
    expect(mail.to).toEqual([second]);
    const secondToken = linkToken(mail, 'verify-email');
    expectMailParts(mail, `${APP_URL}/verify-email?token=${secondToken}`, '24 hours', /if you did not/i);

    // Links for earlier addresses do not verify anything.
    expectInvalidToken(await verify(original));
    expect((await userRow(u.id)).email_verified).toBe(false);

    const ok = await verify(secondToken);
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ id: u.id, email: second, email_verified: true });

    for (const address of [u.email, first, second]) await allSent(address);
    expect(mailsTo(smtp, u.email, VERIFY_SUBJECT)).toHaveLength(1);
    expect(mailsTo(smtp, first, VERIFY_SUBJECT)).toHaveLength(1);
    expect(mailsTo(smtp, second, VERIFY_SUBJECT)).toHaveLength(1);
  });
});

describe('POST /api/auth/forgot-password', () => {
  it('answers the same for existing, unknown, deleted and disabled accounts; only the existing one gets mail', async () => {
    const admin = await t.adminToken();
    const active = await t.register();
    const deleted = await t.register();
    const disabled = await t.register();
    const unknown = uniqueEmail('nobody');
    expect((await t.delete(`/api/users/${deleted.id}`, { token: deleted.access })).status).toBe(204);
    expect((await t.put(`/api/users/${disabled.id}`, { is_active: false }, { token: admin })).status).toBe(200);

    const answers = [];
    for (const email of [active.email, unknown, deleted.email, disabled.email]) answers.push(await forgot(email));
    for (const res of answers) {
      expect(res.status).toBe(200);
      expectJson(res);
      expect(res.body).toEqual(FORGOT_BODY);
    }

    const mail = await nthMail(smtp, active.email, RESET_SUBJECT);
    expect(mail.to).toEqual([active.email]);
    const token = linkToken(mail, 'reset-password');
    expect(token).toMatch(TOKEN_SHAPE);
    expectMailParts(mail, `${APP_URL}/reset-password?token=${token}`, '30 minutes', /if you did not ask for this/i);
    const [row] = await tokenRows(active.id, 'password_reset');
    expect(row.token_hash).toBe(sha256(token));
    expect(JSON.stringify(row)).not.toContain(token);
    const lifetime = new Date(row.expires_at).getTime() - new Date(row.created_at).getTime();
    expect(Math.abs(lifetime - 30 * 60_000)).toBeLessThan(60_000);

    // Every request has done its work after answering, and what it queued has gone out.
    await t.app.services.account.settled();
    for (const address of [active.email, deleted.email, disabled.email]) await allSent(address);
    expect(smtp.to(unknown)).toEqual([]);
    expect(mailsTo(smtp, deleted.email, RESET_SUBJECT)).toEqual([]);
    expect(mailsTo(smtp, disabled.email, RESET_SUBJECT)).toEqual([]);
    expect(mailsTo(smtp, active.email, RESET_SUBJECT)).toHaveLength(1);
    expect(await outboxRows(unknown)).toEqual([]);
    expect((await outboxRows(deleted.email)).map((r) => r.subject)).toEqual([VERIFY_SUBJECT]);
    expect((await outboxRows(disabled.email)).map((r) => r.subject)).toEqual([VERIFY_SUBJECT]);
    expect(await tokenRows(deleted.id, 'password_reset')).toEqual([]);
    expect(await tokenRows(disabled.id, 'password_reset')).toEqual([]);
  });

  it('finds the account whatever the case of the e-mail', async () => {
    const u = await t.register();
    expect(await forgot(`  ${u.email.toUpperCase()} `)).toMatchObject({ status: 200, body: FORGOT_BODY });
    await nthMail(smtp, u.email, RESET_SUBJECT);
  });

  it('an invalid e-mail is a 422', async () => {
    expectValidation(await t.post('/api/auth/forgot-password', { email: 'not-an-email' }), ['body.email']);
  });
});

describe('POST /api/auth/reset-password', () => {
  it('sets the password, revokes every session, verifies the e-mail, and works once', async () => {
    const u = await t.register();
    const second = await loginJson(u.email, u.password);
    expect(second.status).toBe(200);
    expect((await userRow(u.id)).email_verified).toBe(false);

    expect((await forgot(u.email)).status).toBe(200);
    const token = linkToken(await nthMail(smtp, u.email, RESET_SUBJECT), 'reset-password');

    const res = await reset(token, 'brand-new-password');
    expect(res.status).toBe(200);
    expectJson(res);
    expect(res.body).toEqual(RESET_BODY);

    // Old password out, new one in.
    const old = await loginJson(u.email, u.password);
    expect(old.status).toBe(401);
    expect(old.body).toEqual(INVALID_CREDENTIALS_BODY);
    // Every session that existed is revoked: access and refresh tokens fail at once.
    for (const access of [u.access, second.body.data.access_token]) expectUnauthorized(await me(access));
    for (const refreshToken of [u.refresh, second.body.data.refresh_token]) expectUnauthorized(await refresh(refreshToken));
    const sessions = await t.db.selectFrom('sessions').select('revoked_at').where('user_id', '=', u.id).execute();
    expect(sessions).toHaveLength(2);
    for (const s of sessions) expect(s.revoked_at).not.toBeNull();

    const fresh = await loginJson(u.email, 'brand-new-password');
    expect(fresh.status).toBe(200);
    expect(fresh.body.data.user.email_verified).toBe(true);
    expect((await userRow(u.id)).email_verified).toBe(true);

    // Single use: the token does not work again, and the password stays.
    expectInvalidToken(await reset(token, 'yet-another-password'));
    expect((await loginJson(u.email, 'brand-new-password')).status).toBe(200);
    expect((await loginJson(u.email, 'yet-another-password')).status).toBe(401);
  });

  it('a second request, past the mail cooldown, voids the first link', async () => {
    const u = await t.register();
    expect((await forgot(u.email)).status).toBe(200);
    const first = linkToken(await nthMail(smtp, u.email, RESET_SUBJECT, 1), 'reset-password');
    // The first link was sent two minutes ago, past the one-mail-a-minute cooldown.
    await t.db
      .updateTable('account_tokens')
      .set({ created_at: new Date(Date.now() - 120_000) })
      .where('user_id', '=', u.id)
      .execute();
    expect((await forgot(u.email)).status).toBe(200);
    const second = linkToken(await nthMail(smtp, u.email, RESET_SUBJECT, 2), 'reset-password');
    expect(second).not.toBe(first);

    expectInvalidToken(await reset(first, 'first-new-password'));
    expect((await loginJson(u.email, u.password)).status).toBe(200);
    expect((await reset(second, 'second-new-password')).body).toEqual(RESET_BODY);
    expect((await loginJson(u.email, 'second-new-password')).status).toBe(200);
  });

  it('an expired link answers 400 INVALID_TOKEN and changes nothing', async () => {
    const u = await t.register();
    expect((await forgot(u.email)).status).toBe(200);
    const token = linkToken(await nthMail(smtp, u.email, RESET_SUBJECT), 'reset-password');
    await expireToken(token);
    expectInvalidToken(await reset(token, 'brand-new-password'));
    expect((await loginJson(u.email, u.password)).status).toBe(200);
    expect((await me(u.access)).status).toBe(200);
  });

  it('an unknown token answers 400 INVALID_TOKEN with the same message', async () => {
    expectInvalidToken(await reset(randomBytes(32).toString('base64url'), 'brand-new-password'));
  });

  it('validates new_password (422) without spending the token', async () => {
    const u = await t.register();
    expect((await forgot(u.email)).status).toBe(200);
    const token = linkToken(await nthMail(smtp, u.email, RESET_SUBJECT), 'reset-password');

    expectValidation(await reset(token, 'short'), ['body.new_password']);
    expectValidation(await reset(token, 'a'.repeat(73)), ['body.new_password']);
    expectValidation(await reset(token, 'é'.repeat(37)), ['body.new_password']); // 37 characters, 74 bytes
    expectValidation(await t.post('/api/auth/reset-password', { token }), ['body.new_password']);
    expect((await loginJson(u.email, u.password)).status).toBe(200);

    expect((await reset(token, 'é'.repeat(36))).status).toBe(200); // exactly 72 bytes
    expect((await loginJson(u.email, 'é'.repeat(36))).status).toBe(200);
  });
});

describe('POST /api/auth/change-password', () => {
  it('a wrong current password is 400 INVALID_PASSWORD and changes nothing', async () => {
    const u = await t.register();
    const other = await loginJson(u.email, u.password);
    const hashBefore = (await userRow(u.id)).password_hash;

    const res = await t.post(
      '/api/auth/change-password',
      { current_password: 'wrong-password', new_password: 'brand-new-password' },
      { token: u.access },
    );
    expectError(res, 400, 'INVALID_PASSWORD');
    expect(res.body).toEqual({ success: false, error: { code: 'INVALID_PASSWORD', message: 'Current password is incorrect' } });

    expect((await userRow(u.id)).password_hash).toBe(hashBefore);
    expect((await me(u.access)).status).toBe(200);
    expect((await me(other.body.data.access_token)).status).toBe(200);
    expect((await loginJson(u.email, u.password)).status).toBe(200);
    expect((await loginJson(u.email, 'brand-new-password')).status).toBe(401);
  });

  it('keeps the current session, revokes every other one, and swaps the passwords', async () => {
    const u = await t.register(); // session 0
    const s1 = (await loginJson(u.email, u.password)).body.data;
    const s2 = (await loginJson(u.email, u.password)).body.data;
    const bystander = await t.register();

    const res = await t.post(
      '/api/auth/change-password',
      { current_password: u.password, new_password: 'brand-new-password' },
      { token: s1.access_token },
    );
    expect(res.status).toBe(200);
    expectJson(res);
    expect(res.body).toEqual({ success: true, data: { message: expect.any(String) } });

    // The caller's session goes on.
    expect((await me(s1.access_token)).status).toBe(200);
    const rotated = await refresh(s1.refresh_token);
    expect(rotated.status).toBe(200);
    expect((await me(rotated.body.data.access_token)).status).toBe(200);
    // The others end at once.
    for (const access of [u.access, s2.access_token]) expectUnauthorized(await me(access));
    for (const refreshToken of [u.refresh, s2.refresh_token]) expectUnauthorized(await refresh(refreshToken));
    const live = await t.db.selectFrom('sessions').select('id').where('user_id', '=', u.id).where('revoked_at', 'is', null).execute();
    expect(live.map((s) => s.id)).toEqual([sidOf(s1.access_token)]);
    // Another user's session is untouched.
    expect((await me(bystander.access)).status).toBe(200);

    expect((await loginJson(u.email, u.password)).status).toBe(401);
    expect((await loginJson(u.email, 'brand-new-password')).status).toBe(200);
  });

  it('validates new_password (422) and needs a bearer token', async () => {
    const u = await t.register();
    expectValidation(
      await t.post('/api/auth/change-password', { current_password: u.password, new_password: 'short' }, { token: u.access }),
      ['body.new_password'],
    );
    expectValidation(
      await t.post('/api/auth/change-password', { current_password: u.password, new_password: 'é'.repeat(37) }, { token: u.access }),
      ['body.new_password'],
    );
    expectUnauthorized(await t.post('/api/auth/change-password', { current_password: u.password, new_password: 'brand-new-password' }));
    expect((await loginJson(u.email, u.password)).status).toBe(200);
  });
});

describe('sessions', () => {
  it('lists the live sessions, newest first, with the caller marked current', async () => {
    const email = uniqueEmail('sessions');
    const password = 'password-123';
    const registered = await t.post(
      '/api/auth/register',
      { email, password, name: 'Sessions' },
      { headers: { 'User-Agent': 'agent/register' } },
    );
    expect(registered.status).toBe(201);
    const logins = [];
    for (const n of [1, 2, 3]) logins.push((await loginJson(email, password, { 'User-Agent': `agent/${n}` })).body.data);

    const caller = logins[1];
    const res = await t.get('/api/auth/sessions', { token: caller.access_token });
    expect(res.status).toBe(200);
    expectJson(res);
    expect(res.body.success).toBe(true);
    const list = res.body.data as Record<string, unknown>[];
    expect(list).toHaveLength(4);
    expect(list.map((s) => s.user_agent)).toEqual(['agent/3', 'agent/2', 'agent/1', 'agent/register']);
    expect(list.map((s) => s.id)).toEqual([
      sidOf(logins[2].access_token),
      sidOf(logins[1].access_token),
      sidOf(logins[0].access_token),
      sidOf(registered.body.data.access_token),
    ]);
    for (const session of list) {
      expect(Object.keys(session).sort()).toEqual(['created_at', 'current', 'expires_at', 'id', 'ip', 'last_used_at', 'user_agent']);
      expect(session.created_at).toMatch(ISO);
      expect(session.last_used_at).toMatch(ISO);
      expect(session.expires_at).toMatch(ISO);
      expect(session.ip).toMatch(/127\.0\.0\.1|::1/);
      const lifetime = new Date(session.expires_at as string).getTime() - new Date(session.created_at as string).getTime();
      expect(Math.abs(lifetime - 7 * 86400_000)).toBeLessThan(60_000);
    }
    const times = list.map((s) => new Date(s.created_at as string).getTime());
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expect(list.filter((s) => s.current).map((s) => s.id)).toEqual([sidOf(caller.access_token)]);

    // Another caller sees the same list with another current entry.
    const fromFirst = await t.get('/api/auth/sessions', { token: logins[0].access_token });
    expect(fromFirst.body.data.filter((s: { current: boolean }) => s.current).map((s: { id: string }) => s.id)).toEqual([
      sidOf(logins[0].access_token),
    ]);
  });

  it('DELETE revokes one of my sessions at once; again, or for another user, is a 404', async () => {
    const u = await t.register();
    const mine = (await loginJson(u.email, u.password)).body.data;
    const target = (await loginJson(u.email, u.password)).body.data;
    const targetSid = sidOf(target.access_token);
    const stranger = await t.register();
    const strangerSid = sidOf(stranger.access);

    const res = await t.delete(`/api/auth/sessions/${targetSid}`, { token: mine.access_token });
    expect(res.status).toBe(204);
    expect(res.body).toEqual({});
    expectUnauthorized(await me(target.access_token));
    expectUnauthorized(await refresh(target.refresh_token));
    const listed = await t.get('/api/auth/sessions', { token: mine.access_token });
    expect(listed.body.data.map((s: { id: string }) => s.id)).toEqual([sidOf(mine.access_token), sidOf(u.access)]);
    // The caller and the other session go on.
    expect((await me(mine.access_token)).status).toBe(200);
    expect((await me(u.access)).status).toBe(200);

    expectError(await t.delete(`/api/auth/sessions/${targetSid}`, { token: mine.access_token }), 404, 'NOT_FOUND');

    // Another user's session: 404, and it still works.
    expectError(await t.delete(`/api/auth/sessions/${strangerSid}`, { token: mine.access_token }), 404, 'NOT_FOUND');
    expect((await me(stranger.access)).status).toBe(200);
    expect((await refresh(stranger.refresh)).status).toBe(200);

    // An id that is no session at all; an id that is not a uuid.
    expectError(
      await t.delete(`/api/auth/sessions/${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`, { token: mine.access_token }),
      404,
      'NOT_FOUND',
    );
    expectValidation(await t.delete('/api/auth/sessions/not-a-uuid', { token: mine.access_token }), ['path.id']);
    expectUnauthorized(await t.delete(`/api/auth/sessions/${targetSid}`));

    // Revoking the current session ends it.
    expect((await t.delete(`/api/auth/sessions/${sidOf(mine.access_token)}`, { token: mine.access_token })).status).toBe(204);
    expectUnauthorized(await me(mine.access_token));
  });

  it('sessions ended by logout are not listed', async () => {
    const u = await t.register();
    const a = (await loginJson(u.email, u.password)).body.data;
    const b = (await loginJson(u.email, u.password)).body.data;
    expect((await t.post('/api/auth/logout', undefined, { token: b.access_token })).status).toBe(200);

    const res = await t.get('/api/auth/sessions', { token: a.access_token });
    expect(res.status).toBe(200);
    expect(res.body.data.map((s: { id: string }) => s.id)).toEqual([sidOf(a.access_token), sidOf(u.access)]);
    expectUnauthorized(await t.get('/api/auth/sessions'));
  });
});

// ---------------------------------------------------------------------------------------------
// Delivery: outages, restarts, several processes

describe('mail delivery', () => {
  it('keeps retrying while the mail server is down and delivers once it is back, exactly once', async () => {
    const port = await freePort();
    const app = await startTestApp({ ...MAIL_ENV, SMTP_URL: `smtp://127.0.0.1:${port}` });
    let server: TestSmtpServer | undefined;
    try {
      const u = await app.register();
      expect((await forgot(u.email, app)).status).toBe(200);

      // Both queued messages (verification and reset) have failed at least once and wait.
      const pending = await until(async () => {
        const rows = await outboxRows(u.email, app);
        return rows.length === 2 && rows.every((r) => r.attempts >= 1 && r.last_error && r.sent_at === null) && rows;
      }, 'a failed delivery attempt of both messages');
      expect(pending.map((r) => r.subject).sort()).toEqual([VERIFY_SUBJECT, RESET_SUBJECT].sort());
      for (const row of pending) {
        expect(row.last_error).toEqual(expect.any(String));
        expect(row.last_error!.length).toBeGreaterThan(0);
        expect(row.failed_at).toBeNull();
        expect(row.payload).not.toBeNull();
      }

      server = await startSmtpServer(port);
      const resetMail = await nthMail(server, u.email, RESET_SUBJECT, 1, 15_000);
      const verifyMail = await nthMail(server, u.email, VERIFY_SUBJECT, 1, 15_000);
      const token = linkToken(resetMail, 'reset-password');
      const tokens: Record<string, string> = { [RESET_SUBJECT]: token, [VERIFY_SUBJECT]: linkToken(verifyMail, 'verify-email') };

      // The queued messages did not hold their links in clear, nor merely encoded.
      for (const row of pending) {
        const payload = row.payload!;
        const raw = tokens[row.subject];
        expect(payload).not.toContain(raw);
        expect(payload).not.toMatch(/reset-password|verify-email|Hello/);
        expect(payload).not.toContain(u.name);
        for (const part of payload.split('.')) expect(Buffer.from(part, 'base64url').toString('latin1')).not.toContain(raw);
        expect(payload).not.toContain(Buffer.from(raw).toString('base64'));
        expect(payload).not.toContain(Buffer.from(raw).toString('base64url'));
      }

      const rows = await allSent(u.email, app);
      expect(mailsTo(server, u.email, RESET_SUBJECT)).toHaveLength(1);
      expect(mailsTo(server, u.email, VERIFY_SUBJECT)).toHaveLength(1);
      expect(server.messages).toHaveLength(2);
      for (const row of rows) {
        expect(row.sent_at).not.toBeNull();
        expect(row.payload).toBeNull();
        expect(row.last_error).toBeNull();
        expect(row.failed_at).toBeNull();
        expect(row.attempts).toBeGreaterThanOrEqual(2);
      }
      // The link works after the delayed delivery.
      expect((await reset(token, 'brand-new-password', app)).status).toBe(200);
    } finally {
      await app.close();
      await server?.close();
    }
  }, 60_000);

  it('mail queued by a process that stopped is delivered by the next one, exactly once', async () => {
    const port = await freePort();
    // A long retry delay keeps A from touching the rows again before it stops.
    const a = await startTestApp({ ...MAIL_ENV, MAIL_RETRY_BASE_MS: '2000', SMTP_URL: `smtp://127.0.0.1:${port}` });
    let b: TestContext | undefined;
    let server: TestSmtpServer | undefined;
    try {
      const u = await a.register();
      expect((await forgot(u.email, a)).status).toBe(200);
      await until(
        async () => {
          const rows = await outboxRows(u.email, a);
          return rows.length === 2 && rows.every((r) => r.attempts >= 1 && r.last_error && r.locked_until === null && r.sent_at === null);
        },
        'both messages failed once',
        30_000,
      );
      await a.stop();

      server = await startSmtpServer(port);
      b = await startTestApp({ ...MAIL_ENV, SMTP_URL: server.url }, { sameDatabaseAs: a });
      const resetMail = await nthMail(server, u.email, RESET_SUBJECT, 1, 15_000);
      await nthMail(server, u.email, VERIFY_SUBJECT, 1, 15_000);
      const rows = await allSent(u.email, b);
      expect(server.messages).toHaveLength(2);
      expect(mailsTo(server, u.email, RESET_SUBJECT)).toHaveLength(1);
      expect(mailsTo(server, u.email, VERIFY_SUBJECT)).toHaveLength(1);
      for (const row of rows) {
        expect(row).toMatchObject({ payload: null, last_error: null, failed_at: null });
        expect(row.attempts).toBeGreaterThanOrEqual(2); // A's failed try, then B's delivery
      }

      // The link B delivered, sealed by A, works on B.
      const token = linkToken(resetMail, 'reset-password');
      expect((await reset(token, 'brand-new-password', b)).body).toEqual(RESET_BODY);
      expect((await loginJson(u.email, 'brand-new-password', undefined, b)).status).toBe(200);
    } finally {
      await b?.close();
      await a.close();
      await server?.close();
    }
  }, 60_000);

  const onPostgres = process.env.TEST_DATABASE_KIND === 'postgres';
  (onPostgres ? it : it.skip)(
    `several processes on one database send every message exactly once${onPostgres ? '' : ' (PostgreSQL only: the embedded database serves a single process)'}`,
    async () => {
      const server = await startSmtpServer();
      const env = { ...MAIL_ENV, SMTP_URL: server.url };
      const a = await startTestApp(env);
      let b: TestContext | undefined;
      try {
        b = await startTestApp(env, { sameDatabaseAs: a });
        const apps = [a, b];
        const users = await Promise.all(Array.from({ length: 20 }, (_, i) => apps[i % 2].register()));
        const answers = await Promise.all(users.map((u, i) => forgot(u.email, apps[(i + 1) % 2])));
        for (const res of answers) expect(res.body).toEqual(FORGOT_BODY);

        await until(() => server.messages.length >= 40, '40 messages', 20_000);
        // Once every row is marked sent, nothing more can be delivered.
        const rows = await until(async () => {
          const all = await a.db.selectFrom('mail_outbox').selectAll().execute();
          return all.every((r) => r.sent_at !== null) && all;
        }, 'every outbox row marked sent');
        expect(server.messages).toHaveLength(40);
        for (const u of users) {
          expect(mailsTo(server, u.email, VERIFY_SUBJECT)).toHaveLength(1);
          expect(mailsTo(server, u.email, RESET_SUBJECT)).toHaveLength(1);
        }
        expect(rows).toHaveLength(40);
        for (const row of rows) {
          expect(row.sent_at).not.toBeNull();
          expect(row).toMatchObject({ payload: null, last_error: null, failed_at: null });
        }
      } finally {
        await b?.close();
        await a.close();
        await server.close();
      }
    },
    60_000,
  );
});
