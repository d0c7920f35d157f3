import type { AuditEventTable } from '../src/audit/audit-repository.js';
import { outboxDrained } from './support/outbox.js';
import { startTestApp, uniqueEmail, type TestContext } from './support/app.js';
import { linkToken, startSmtpServer, type TestSmtpServer } from './support/smtp.js';

// The reset-mail cooldown: one mail a minute and PASSWORD_RESET_MAILS_PER_HOUR (5) an hour per
// account; a request within it sends nothing and leaves the link already sent working.
const RESET_SUBJECT = 'Reset your password';
const FORGOT_BODY = { success: true, data: { message: 'If the account exists, a reset link has been sent' } };

let smtp: TestSmtpServer;
let t: TestContext;
beforeAll(async () => {
  smtp = await startSmtpServer();
  t = await startTestApp({ SMTP_URL: smtp.url, APP_URL: 'https://app.example.test', MAIL_POLL_INTERVAL_MS: '100' });
});
afterAll(async () => {
  await t?.close();
  await smtp?.close();
});

const forgot = (email: string) => t.post('/api/auth/forgot-password', { email });
const resetMails = (email: string) => smtp.to(email).filter((mail) => mail.subject === RESET_SUBJECT);
const tokenRows = (userId: number) =>
  t.db
    .selectFrom('account_tokens')
    .select(['used_at', 'created_at'])
    .where('user_id', '=', userId)
    .where('purpose', '=', 'password_reset')
    .orderBy('id')
    .execute();

/** Every reset request answered so far has done its work, and every mail it queued has gone out. */
async function quiet(email: string): Promise<void> {
  await t.app.services.account.settled();
  await outboxDrained(t.db, email);
}

/** Moves every reset link of the user back in time, as if sent that long ago. */
const age = (userId: number, seconds: number) =>
  t.db
    .updateTable('account_tokens')
    .set({ created_at: new Date(Date.now() - seconds * 1000) })
    .where('user_id', '=', userId)
    .where('purpose', '=', 'password_reset')
    .execute();

describe('the reset-mail cooldown', () => {
  it('two requests in a row send one mail, and its link still works', async () => {
    const user = await t.register();
    expect(await forgot(user.email)).toMatchObject({ status: 200, body: FORGOT_BODY });
    const first = await smtp.waitFor((mail) => mail.to.includes(user.email) && mail.subject === RESET_SUBJECT);
    expect(await forgot(user.email)).toMatchObject({ status: 200, body: FORGOT_BODY });
    await quiet(user.email);

    expect(resetMails(user.email)).toHaveLength(1);
    const rows = await tokenRows(user.id);
    expect(rows).toHaveLength(1);
    expect(rows[0].used_at).toBeNull();
    const events = await t.db
      .withTables<{ audit_events: AuditEventTable }>()
      .selectFrom('audit_events')
      .select('event_type')
      .where('subject_user_id', '=', user.id)
      .where('event_type', '=', 'password.reset_requested')
      .execute();
    expect(events).toHaveLength(1);

    const reset = await t.post('/api/auth/reset-password', {
      token: linkToken(first, 'reset-password'),
      new_password: 'after-the-cooldown-1',
    });
    expect(reset.status).toBe(200);
    expect((await t.post('/api/auth/login/json', { email: user.email, password: 'after-the-cooldown-1' })).status).toBe(200);
  });

  it('two requests at once send one mail', async () => {
    const user = await t.register();
    const answers = await Promise.all([forgot(user.email), forgot(user.email), forgot(user.email)]);
    for (const res of answers) expect(res).toMatchObject({ status: 200, body: FORGOT_BODY });
    await quiet(user.email);
    expect(resetMails(user.email)).toHaveLength(1);
    expect(await tokenRows(user.id)).toHaveLength(1);
  });

  it('a minute later a new link is sent (and voids the first); at most five an hour', async () => {
    const user = await t.register();
    for (let n = 1; n <= 5; n++) {
      expect((await forgot(user.email)).status).toBe(200);
      await smtp.waitFor(() => resetMails(user.email).length === n);
      await quiet(user.email);
      // Each link was sent a minute and a bit ago: past the cooldown, within the hour.
      await age(user.id, 61 + (5 - n));
    }
    const rows = await tokenRows(user.id);
    expect(rows).toHaveLength(5);
    expect(rows.filter((row) => row.used_at === null)).toHaveLength(1);
    const fifth = resetMails(user.email)[4];

    // The sixth within the hour sends nothing, and the fifth link still works.
    expect((await forgot(user.email)).status).toBe(200);
    await quiet(user.email);
    expect(resetMails(user.email)).toHaveLength(5);
    expect(await tokenRows(user.id)).toHaveLength(5);
    expect(
      (await t.post('/api/auth/reset-password', { token: linkToken(fifth, 'reset-password'), new_password: 'the-fifth-link-2' })).status,
    ).toBe(200);
  });

  it('answers the same for an unknown e-mail, and sends nothing', async () => {
    const unknown = uniqueEmail('nobody');
    expect(await forgot(unknown)).toMatchObject({ status: 200, body: FORGOT_BODY });
    await t.app.services.account.settled();
    expect(await t.db.selectFrom('mail_outbox').select('id').where('recipient', '=', unknown).execute()).toEqual([]);
  });
});
