import { ADMIN, startTestApp, uniqueEmail, type RegisteredUser, type Response, type TestContext } from './support/app.js';
import { auditRows } from './support/audit.js';
import { expectError } from './support/expect.js';
import { linkToken, startSmtpServer, type ReceivedMail, type TestSmtpServer } from './support/smtp.js';
import { until } from './support/wait.js';

const APP_URL = 'https://app.example.test';
const MAX_FAILURES = 3;
const ENV = {
  APP_URL,
  MAIL_POLL_INTERVAL_MS: '100',
  MAIL_RETRY_BASE_MS: '200',
  // The lockout on; the other limits out of the way of a suite that makes many requests.
  RATE_LIMIT_ENABLED: 'true',
  AUTH_RATE_LIMIT_PER_MINUTE: '100000',
  RATE_LIMIT_PER_MINUTE: '100000',
  LOGIN_MAX_FAILURES: String(MAX_FAILURES),
};

const CHANGE_SUBJECT = 'Confirm your new e-mail address';
const REQUESTED_SUBJECT = 'Your e-mail address is about to change';
const CHANGED_SUBJECT = 'Your e-mail address was changed';
const VERIFY_SUBJECT = 'Confirm your e-mail address';
const RESET_SUBJECT = 'Reset your password';
const PASSWORD_SUBJECT = 'Your password was changed';

let smtp: TestSmtpServer;
let t: TestContext;
let admin: string;
beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestApp({ ...ENV, SMTP_URL: smtp.url });
  admin = await t.adminToken();
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
});

const mailsTo = (address: string, subject: string) => smtp.to(address).filter((m) => m.subject === subject);
const nthMail = (address: string, subject: string, n = 1): Promise<ReceivedMail> =>
  until(() => mailsTo(address, subject)[n - 1], `mail #${n} "${subject}" to ${address}`);

const userRow = (id: number, app = t) => app.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const outbox = (recipient: string, app = t) =>
  app.db.selectFrom('mail_outbox').selectAll().where('recipient', '=', recipient).orderBy('id').execute();
/** Waits until every message queued for the recipient has been handed to the SMTP server. */
const allSent = (recipient: string, app = t) =>
  until(async () => {
    const rows = await outbox(recipient, app);
    return rows.every((r) => r.sent_at !== null) && rows;
  }, `outbox rows for ${recipient} marked sent`);
const sessionsOf = (userId: number, app = t) => app.db.selectFrom('sessions').selectAll().where('user_id', '=', userId).execute();
const auditOf = (subject: number, type: string, app = t) => auditRows(app, subject, type);
const login = (email: string, password: string, app = t) => app.post('/api/auth/login/json', { email, password });
const me = (token: string, app = t) => app.get('/api/auth/me', { token });
const verify = (token: string) => t.post('/api/auth/verify-email', { token });

function expectValidation(res: Response, field: string): void {
  expectError(res, 422, 'VALIDATION_ERROR');
  expect(res.body.error.details).toEqual([{ field, message: expect.any(String) }]);
}

/** Registers a user and waits for the registration mail, so that later mail counts start clean. */
async function registered(overrides: Partial<{ email: string; password: string; name: string }> = {}): Promise<RegisteredUser> {
  const u = await t.register(overrides);
  await allSent(u.email);
  return u;
}

describe('a stolen access token alone cannot change the credentials', () => {
  it("refuses the user's own new password without current_password (422) or with a wrong one (400), and writes nothing", async () => {
    const u = await registered({ password: 'original-password' });
    const before = await userRow(u.id);

    expectValidation(await t.put(`/api/users/${u.id}`, { password: 'attacker-password' }, { token: u.access }), 'body.current_password');
    const wrong = await t.put(`/api/users/${u.id}`, { password: 'attacker-password', current_password: 'a-guess-1' }, { token: u.access });
    expectError(wrong, 400, 'INVALID_PASSWORD');
    expect(wrong.body).toEqual({ success: false, error: { code: 'INVALID_PASSWORD', message: 'Current password is incorrect' } });

    expect(await userRow(u.id)).toEqual(before);
    expect((await sessionsOf(u.id)).every((s) => s.revoked_at === null)).toBe(true);
    expect((await outbox(u.email)).map((r) => r.subject)).toEqual([VERIFY_SUBJECT]);
    expectError(await login(u.email, 'attacker-password'), 401, 'INVALID_CREDENTIALS');
    expect((await login(u.email, 'original-password')).status).toBe(200);
  });

  it("refuses the user's own new e-mail without current_password or with a wrong one, and writes nothing", async () => {
    const u = await registered({ password: 'original-password' });
    const before = await userRow(u.id);
    const attacker = uniqueEmail('attacker');

    expectValidation(await t.put(`/api/users/${u.id}`, { email: attacker }, { token: u.access }), 'body.current_password');
    expectValidation(await t.put(`/api/users/${u.id}`, { email: attacker, name: 'Mallory' }, { token: u.access }), 'body.current_password');
    expectError(
      await t.put(`/api/users/${u.id}`, { email: attacker, current_password: 'a-guess-1' }, { token: u.access }),
      400,
      'INVALID_PASSWORD',
    );

    expect(await userRow(u.id)).toEqual(before);
    expect(await outbox(attacker)).toEqual([]);
    expect(await t.db.selectFrom('account_tokens').select('email').where('user_id', '=', u.id).execute()).toEqual([{ email: u.email }]);
  });

  it('an admin changing their own password or e-mail needs their current password too', async () => {
    const row = await t.db.selectFrom('users').selectAll().where('email', '=', ADMIN.email).executeTakeFirstOrThrow();
    expectValidation(await t.put(`/api/users/${row.id}`, { password: 'attacker-password' }, { token: admin }), 'body.current_password');
    expectValidation(await t.put(`/api/users/${row.id}`, { email: uniqueEmail('attacker') }, { token: admin }), 'body.current_password');
    expectError(
      await t.put(`/api/users/${row.id}`, { password: 'attacker-password', current_password: 'not-it-at-all' }, { token: admin }),
      400,
      'INVALID_PASSWORD',
    );
    expect(await userRow(row.id)).toEqual(row);
  });

  it('a wrong current password counts as a failed login: the account locks, for change-password too', async () => {
    const u = await registered({ password: 'original-password' });
    for (let i = 0; i < MAX_FAILURES - 1; i++) {
      expectError(
        await t.put(`/api/users/${u.id}`, { password: 'attacker-password', current_password: `guess-${i}` }, { token: u.access }),
        400,
        'INVALID_PASSWORD',
      );
    }
    expectError(
      await t.post('/api/auth/change-password', { current_password: 'last-guess', new_password: 'attacker-password' }, { token: u.access }),
      400,
      'INVALID_PASSWORD',
    );
    // Locked: even the right password is refused, by PUT, change-password and sign-in alike.
    expectError(
      await t.put(`/api/users/${u.id}`, { password: 'attacker-password', current_password: 'original-password' }, { token: u.access }),
      429,
      'RATE_LIMITED',
    );
    expectError(
      await t.post(
        '/api/auth/change-password',
        { current_password: 'original-password', new_password: 'attacker-password' },
        { token: u.access },
      ),
      429,
      'RATE_LIMITED',
    );
    expectError(await login(u.email, 'original-password'), 429, 'RATE_LIMITED');

    const failures = await auditOf(u.id, 'login.failed');
    expect(failures.map((e) => e.details)).toEqual(Array(MAX_FAILURES).fill({ reason: 'wrong_current_password' }));
    expect(await auditOf(u.id, 'login.locked')).toHaveLength(1);
  });

  it('a user may still rename themselves without a password, and current_password alone changes nothing', async () => {
    const u = await registered();
    const res = await t.put(`/api/users/${u.id}`, { name: 'Renamed Only' }, { token: u.access });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'Renamed Only', pending_email: null });
  });
});

describe('a new e-mail of your own stays pending until its link is followed', () => {
  it('the new address gets the link, the old one the notice, and sign-in and recovery stay on the old address until the link is followed', async () => {
    const u = await registered({ password: 'original-password', name: 'Ada Lovelace' });
    const next = uniqueEmail('next');

    const res = await t.put(
      `/api/users/${u.id}`,
      { email: next.toUpperCase(), current_password: 'original-password' },
      { token: u.access },
    );
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: u.id, email: u.email, pending_email: next, email_verified: false });
    expect(await userRow(u.id)).toMatchObject({ email: u.email, pending_email: next });
    expect((await me(u.access)).body.data.pending_email).toBe(next);

    // The link goes to the new address; the old address is told which address was asked for.
    const link = await nthMail(next, CHANGE_SUBJECT);
    const token = linkToken(link, 'verify-email');
    const notice = await nthMail(u.email, REQUESTED_SUBJECT);
    for (const part of [notice.text, notice.html]) {
      expect(part).toContain(next);
      expect(part).toMatch(/if this was not you/i);
      expect(part).not.toContain('token=');
    }

    // Until the link is followed, the old address is the account's.
    expect((await login(u.email, 'original-password')).status).toBe(200);
    expectError(await login(next, 'original-password'), 401, 'INVALID_CREDENTIALS');
    expect((await t.post('/api/auth/forgot-password', { email: next })).status).toBe(200);
    expect((await t.post('/api/auth/forgot-password', { email: u.email })).status).toBe(200);
    await nthMail(u.email, RESET_SUBJECT);
    expect((await allSent(next)).map((r) => r.subject)).toEqual([CHANGE_SUBJECT]);

    // Following it moves the account.
    const verified = await verify(token);
    expect(verified.status).toBe(200);
    expect(verified.body.data).toMatchObject({ id: u.id, email: next, pending_email: null, email_verified: true });
    expect(await userRow(u.id)).toMatchObject({ email: next, pending_email: null, email_verified: true });
    const events = await auditOf(u.id, 'email.verified');
    expect(events.at(-1)).toMatchObject({ actor_user_id: u.id, details: { email_changed: true } });
    expect((await login(next, 'original-password')).status).toBe(200);
    expectError(await login(u.email, 'original-password'), 401, 'INVALID_CREDENTIALS');
    expectError(await verify(token), 400, 'INVALID_TOKEN');
  });

  it("a second change voids the first one's link; resend sends a new link to the pending address", async () => {
    const u = await registered({ password: 'original-password' });
    const first = uniqueEmail('first');
    const second = uniqueEmail('second');
    expect((await t.put(`/api/users/${u.id}`, { email: first, current_password: 'original-password' }, { token: u.access })).status).toBe(
      200,
    );
    const firstToken = linkToken(await nthMail(first, CHANGE_SUBJECT), 'verify-email');
    expect((await t.put(`/api/users/${u.id}`, { email: second, current_password: 'original-password' }, { token: u.access })).status).toBe(
      200,
    );
    const secondToken = linkToken(await nthMail(second, CHANGE_SUBJECT), 'verify-email');
    await nthMail(u.email, REQUESTED_SUBJECT, 2);

    expectError(await verify(firstToken), 400, 'INVALID_TOKEN');
    expect(await userRow(u.id)).toMatchObject({ email: u.email, pending_email: second });

    // Resend while pending: a new link to the pending address, the previous one void, no new notice.
    const resent = await t.post('/api/auth/verify-email/resend', undefined, { token: u.access });
    expect(resent.status).toBe(200);
    const thirdToken = linkToken(await nthMail(second, CHANGE_SUBJECT, 2), 'verify-email');
    expectError(await verify(secondToken), 400, 'INVALID_TOKEN');
    await allSent(u.email);
    expect(mailsTo(u.email, REQUESTED_SUBJECT)).toHaveLength(2);

    expect((await verify(thirdToken)).body.data).toMatchObject({ email: second, pending_email: null, email_verified: true });
  });

  it('sending your current address again withdraws a pending change and voids its link', async () => {
    const u = await registered({ password: 'original-password' });
    const next = uniqueEmail('withdrawn');
    await t.put(`/api/users/${u.id}`, { email: next, current_password: 'original-password' }, { token: u.access });
    const token = linkToken(await nthMail(next, CHANGE_SUBJECT), 'verify-email');
    const res = await t.put(`/api/users/${u.id}`, { email: u.email, current_password: 'original-password' }, { token: u.access });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ email: u.email, pending_email: null });
    expectError(await verify(token), 400, 'INVALID_TOKEN');
    expect(await userRow(u.id)).toMatchObject({ email: u.email, pending_email: null });
  });

  it('an address another account has is a 409 at once; one taken after the request is a 409 when the link is followed', async () => {
    const u = await registered({ password: 'original-password' });
    const other = await registered();
    expectError(
      await t.put(`/api/users/${u.id}`, { email: other.email, current_password: 'original-password' }, { token: u.access }),
      409,
      'CONFLICT',
    );
    expect(await userRow(u.id)).toMatchObject({ email: u.email, pending_email: null });

    const wanted = uniqueEmail('contested');
    await t.put(`/api/users/${u.id}`, { email: wanted, current_password: 'original-password' }, { token: u.access });
    const token = linkToken(await nthMail(wanted, CHANGE_SUBJECT), 'verify-email');
    const taker = await t.register({ email: wanted });
    const res = await verify(token);
    expectError(res, 409, 'CONFLICT');
    expect(await userRow(u.id)).toMatchObject({ email: u.email, pending_email: wanted });
    expect(await userRow(taker.id)).toMatchObject({ email: wanted });
  });
});

describe('several users confirming one new address at once', () => {
  it('one link moves its account, the others answer 409 and keep their addresses', async () => {
    const wanted = uniqueEmail('raced');
    const users = await Promise.all([0, 1, 2].map(() => registered({ password: 'original-password' })));
    for (const u of users) {
      expect(
        (await t.put(`/api/users/${u.id}`, { email: wanted, current_password: 'original-password' }, { token: u.access })).status,
      ).toBe(200);
    }
    await until(() => mailsTo(wanted, CHANGE_SUBJECT).length === users.length, `${users.length} links to ${wanted}`);
    const tokens = mailsTo(wanted, CHANGE_SUBJECT).map((m) => linkToken(m, 'verify-email'));
    const answers = await Promise.all(tokens.map((token) => verify(token)));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409, 409]);
    for (const res of answers.filter((r) => r.status !== 200)) expectError(res, 409, 'CONFLICT');
    const rows = await Promise.all(users.map((u) => userRow(u.id)));
    expect(rows.filter((r) => r.email === wanted)).toHaveLength(1);
    for (const [i, r] of rows.entries()) if (r.email !== wanted) expect(r).toMatchObject({ email: users[i].email, pending_email: wanted });
  });
});

describe('an admin changing another user', () => {
  it('applies a new e-mail at once, tells the old address, and audits which fields changed and by whom', async () => {
    const u = await registered({ password: 'original-password' });
    const adminRow = await t.db.selectFrom('users').select('id').where('email', '=', ADMIN.email).executeTakeFirstOrThrow();
    const next = uniqueEmail('by-admin');
    const res = await t.put(`/api/users/${u.id}`, { email: next, password: 'admin-chosen-pw' }, { token: admin });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ email: next, pending_email: null, email_verified: false });
    expect((await login(next, 'admin-chosen-pw')).status).toBe(200);

    await nthMail(next, VERIFY_SUBJECT);
    const changed = await nthMail(u.email, CHANGED_SUBJECT);
    expect(changed.text).toContain(next);
    const notice = await nthMail(next, PASSWORD_SUBJECT);
    expect(notice.text).toMatch(/administrator/);

    const [event] = await auditOf(u.id, 'user.updated');
    expect(event).toMatchObject({ actor_user_id: adminRow.id, details: { fields: ['email', 'password'] } });
  });
});

describe('every password change or reset sends a notice', () => {
  it('change-password, a PUT by the user, a PUT by an admin and a reset each queue one notice to the current address', async () => {
    const u = await registered({ password: 'password-one' });
    const pending = uniqueEmail('pending');
    // With a change of address pending, notices still go to the current address.
    await t.put(`/api/users/${u.id}`, { email: pending, current_password: 'password-one' }, { token: u.access });

    expect(
      (await t.post('/api/auth/change-password', { current_password: 'password-one', new_password: 'password-two' }, { token: u.access }))
        .status,
    ).toBe(200);
    // Queued in the transaction of the change: the row exists when the answer arrives.
    expect((await outbox(u.email)).filter((r) => r.subject === PASSWORD_SUBJECT)).toHaveLength(1);
    expect(
      (await t.put(`/api/users/${u.id}`, { password: 'password-three', current_password: 'password-two' }, { token: u.access })).status,
    ).toBe(200);
    expect((await outbox(u.email)).filter((r) => r.subject === PASSWORD_SUBJECT)).toHaveLength(2);
    expect((await t.put(`/api/users/${u.id}`, { password: 'password-four' }, { token: admin })).status).toBe(200);
    expect((await outbox(u.email)).filter((r) => r.subject === PASSWORD_SUBJECT)).toHaveLength(3);

    await t.post('/api/auth/forgot-password', { email: u.email });
    const resetToken = linkToken(await nthMail(u.email, RESET_SUBJECT), 'reset-password');
    expect((await t.post('/api/auth/reset-password', { token: resetToken, new_password: 'password-five' })).status).toBe(200);
    expect((await outbox(u.email)).filter((r) => r.subject === PASSWORD_SUBJECT)).toHaveLength(4);

    const notices = await until(
      () => mailsTo(u.email, PASSWORD_SUBJECT).length === 4 && mailsTo(u.email, PASSWORD_SUBJECT),
      'four password notices',
    );
    // Delivery order is not queue order: compare the set of reasons given.
    expect(notices.map((m) => m.text.split('\n')[2]).sort()).toEqual([
      'An administrator just set a new password for your account.',
      'The password of your account was just changed.',
      'The password of your account was just changed.',
      'The password of your account was just reset with a link sent to this address; every session was signed out.',
    ]);
    await allSent(pending);
    expect(mailsTo(pending, PASSWORD_SUBJECT)).toHaveLength(0);
  });

  it('a refused change sends no notice', async () => {
    const u = await registered({ password: 'password-one' });
    expectError(
      await t.post('/api/auth/change-password', { current_password: 'wrong-one', new_password: 'password-two' }, { token: u.access }),
      400,
      'INVALID_PASSWORD',
    );
    expect((await outbox(u.email)).map((r) => r.subject)).toEqual([VERIFY_SUBJECT]);
  });
});

describe('disabling a user', () => {
  it('revokes every session at once; enabling again brings none back', async () => {
    const u = await registered({ password: 'disable-password' });
    const second = (await login(u.email, 'disable-password')).body.data;
    expect((await t.put(`/api/users/${u.id}`, { is_active: false }, { token: admin })).status).toBe(200);
    const sessions = await sessionsOf(u.id);
    expect(sessions).toHaveLength(2);
    expect(sessions.every((s) => s.revoked_at !== null)).toBe(true);

    expect((await t.put(`/api/users/${u.id}`, { is_active: true }, { token: admin })).status).toBe(200);
    for (const [access, refresh] of [
      [u.access, u.refresh],
      [second.access_token, second.refresh_token],
    ]) {
      expectError(await me(access), 401, 'UNAUTHORIZED');
      expectError(await t.post('/api/auth/refresh', { refresh_token: refresh }), 401, 'UNAUTHORIZED');
    }
    expect((await login(u.email, 'disable-password')).status).toBe(200);
  });
});

describe('names and addresses in mail', () => {
  it('cannot forge lines, paragraphs or reordered text in either part', async () => {
    const u = await registered({ password: 'original-password' });
    const forged = 'Eve\r\n\r\nYour account is suspended. Call +1 555 0100\u2028\u202Eexe.txt\u0085<b>now</b>';
    await t.db.updateTable('users').set({ name: forged }).where('id', '=', u.id).execute();
    await t.post('/api/auth/forgot-password', { email: u.email });
    const mail = await nthMail(u.email, RESET_SUBJECT);

    const [greeting, blank] = mail.text.split(/\r?\n/);
    expect(greeting).toMatch(/^Hello Eve\uFFFD+Your account is suspended\. Call \+1 555 0100\uFFFD+exe\.txt\uFFFD<b>now<\/b>,$/);
    expect(blank).toBe('');
    expect(mail.text).not.toMatch(/[\u2028\u202E\u0085]/);
    expect(mail.html).not.toMatch(/[\u2028\u202E\u0085]/);
    expect(mail.html).toContain('&#60;b&#62;now&#60;/b&#62;');
    expect(mail.html).not.toContain('<b>now');
    expect(mail.html).toMatch(
      /<p>Hello Eve\uFFFD+Your account is suspended\. Call \+1 555 0100\uFFFD+exe\.txt\uFFFD&#60;b&#62;now&#60;\/b&#62;,<\/p>/,
    );
  });
});

describe('the last admin', () => {
  let a: TestContext;
  let smtpOfA: TestSmtpServer;
  beforeAll(async () => {
    smtpOfA = await startSmtpServer();
    a = await startTestApp({ ...ENV, SMTP_URL: smtpOfA.url });
  });
  afterAll(async () => {
    await a?.close();
    await smtpOfA?.close();
  });

  const activeAdmins = async () =>
    (
      await a.db
        .selectFrom('users')
        .select('id')
        .where('role', '=', 'admin')
        .where('is_active', '=', true)
        .where('deleted_at', 'is', null)
        .orderBy('id')
        .execute()
    ).map((r) => r.id);

  it('cannot demote, disable or delete themselves: 409, and nothing changes', async () => {
    const token = await a.adminToken();
    const [id] = await activeAdmins();
    const before = await userRow(id, a);
    for (const res of [
      await a.put(`/api/users/${id}`, { role: 'user' }, { token }),
      await a.put(`/api/users/${id}`, { is_active: false }, { token }),
      await a.put(`/api/users/${id}`, { role: 'user', is_active: false, name: 'Gone' }, { token }),
      await a.delete(`/api/users/${id}`, { token }),
    ]) {
      expectError(res, 409, 'CONFLICT');
      expect(res.body.error.message).toBe('The last admin cannot be demoted, disabled or deleted');
    }
    expect(await userRow(id, a)).toEqual(before);
    expect((await sessionsOf(id, a)).every((s) => s.revoked_at === null)).toBe(true);
    expect((await me(token, a)).status).toBe(200);
  });

  it('with a second admin, either may step down; then the other is the last', async () => {
    const token = await a.adminToken();
    const [first] = await activeAdmins();
    const email = uniqueEmail('second-admin');
    const created = await a.post('/api/users', { email, name: 'Second Admin', password: 'second-admin-pw', role: 'admin' }, { token });
    expect(created.status).toBe(201);
    const second = created.body.data.id as number;
    const secondToken = (await login(email, 'second-admin-pw', a)).body.data.access_token as string;

    expect((await a.put(`/api/users/${second}`, { role: 'user' }, { token: secondToken })).status).toBe(200);
    expect(await activeAdmins()).toEqual([first]);
    expectError(await a.delete(`/api/users/${first}`, { token }), 409, 'CONFLICT');
    await a.db.updateTable('users').set({ role: 'admin' }).where('id', '=', second).execute();
  });

  it('two admins demoting each other at once leave one admin', async () => {
    const token = await a.adminToken();
    const [first] = await activeAdmins();
    const email = uniqueEmail('rival-admin');
    const created = await a.post('/api/users', { email, name: 'Rival Admin', password: 'rival-admin-pw', role: 'admin' }, { token });
    const rival = created.body.data.id as number;
    const rivalToken = (await login(email, 'rival-admin-pw', a)).body.data.access_token as string;
    await a.db.updateTable('users').set({ role: 'user' }).where('role', '=', 'admin').where('id', 'not in', [first, rival]).execute();

    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all([
        a.put(`/api/users/${rival}`, { role: 'user' }, { token }),
        a.put(`/api/users/${first}`, { role: 'user' }, { token: rivalToken }),
      ]);
      const statuses = answers.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      // The loser is refused by the lock (409) or, if it signed in after the winner committed, by its role (403).
      for (const res of answers.filter((r) => r.status !== 200)) expect(['CONFLICT', 'FORBIDDEN']).toContain(res.body.error.code);
      expect(await activeAdmins()).toHaveLength(1);
      await a.db.updateTable('users').set({ role: 'admin' }).where('id', 'in', [first, rival]).execute();
    }
  });
});
