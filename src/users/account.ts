import type { Kysely } from 'kysely';
import { joinByDomain } from '../organizations/domain-policy.js';
import type { AccountConfig } from '../config/index.js';
import { AfterAnswer } from '../infra/after-answer.js';
import { consumeAccountToken, recentAccountTokens } from './account-token-repository.js';
import { endUserOidcRecords } from '../oidc/record-repository.js';
import { listLiveSessions, revokeUserSessions } from '../sessions/session-repository.js';
import { revokeUserSession } from '../sessions/session-revocation.js';
import { queueBackchannelLogouts } from '../oidc/backchannel-logout.js';
import type { Transact } from '../db/transaction.js';
import type { Database, SessionRow, UserRow } from '../db/types.js';
import { isUniqueViolation } from '../db/errors.js';
import { findUserByEmail, findUserById, updateLiveUser } from './user-repository.js';
import { Conflict, InvalidToken, NotFound } from '../errors.js';
import type { Logger } from '../logger.js';
import type { MailboxClaim } from '../mailbox/claim.js';
import type { AccountMail } from '../mail/account-mail.js';
import { recordEvent } from '../audit/audit-events.js';
import { normalizeEmail } from '../email-address.js';
import type { BreachedPasswords } from '../passwords/breached-passwords.js';
import type { CurrentPassword } from '../passwords/current-password.js';
import type { LoginGuard } from '../sessions/login-guard.js';
import { checkNewPassword, checkNotEmail, clientCaller, userCaller, type PasswordHasher } from '../passwords/passwords.js';
import { sessionOf, type ClientInfo, type Principal } from '../principal.js';
import { sha256 } from '../sessions/tokens.js';

/** Password change and reset, e-mail verification, and the user's own sessions. */
export class AccountService {
  /** Work started after an answer (reset links), so that a stop can wait for it. */
  private readonly later = new AfterAnswer();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly config: AccountConfig,
    private readonly mail: AccountMail,
    private readonly passwords: PasswordHasher,
    private readonly transact: Transact,
    private readonly logger: Logger,
    private readonly currentPassword: CurrentPassword,
    /** Hands an account whose address was never verified to whoever proves its mailbox. */
    private readonly mailbox: MailboxClaim,
    /** Lifted by a completed password reset; absent when rate limiting is off. */
    private readonly loginGuard?: LoginGuard,
    /** Refuses passwords known from breaches; absent unless PWNED_PASSWORDS_CHECK. */
    private readonly breached?: BreachedPasswords,
  ) {}

  /** Keeps the current session and revokes every other one of the user. */
  async changePassword(principal: Principal, currentPassword: string, newPassword: string): Promise<void> {
    const sessionId = sessionOf(principal);
    checkNewPassword(newPassword, 'body.new_password', principal.user.email);
    await this.currentPassword.confirm(principal.user, currentPassword, principal.client);
    await this.breached?.refuse(newPassword, 'body.new_password');
    const passwordHash = await this.passwords.hash(newPassword, userCaller(principal.user.id));
    const id = principal.user.id;
    await this.transact(async (trx) => {
      const user = await updateLiveUser(trx, id, { password_hash: passwordHash });
      if (!user) throw new NotFound('User not found');
      await revokeUserSessions(trx, id, sessionId);
      await queueBackchannelLogouts(trx, { userId: id });
      await endUserOidcRecords(trx, id);
      await this.mail.sendPasswordChangedNotice(trx, user, 'changed');
      await recordEvent(trx, { type: 'password.changed', actor: id, subject: id, origin: principal.client });
    });
    this.mail.flush();
  }

  /**
   * Answers at once: the lookup, the token and the mail happen after the answer, so its timing says
   * nothing about which e-mails have accounts. An account that can sign in gets a link, unless one
   * went out within `PASSWORD_RESET_MAIL_INTERVAL_SECONDS` or `PASSWORD_RESET_MAILS_PER_HOUR`
   * already did; then the link already sent stays the valid one. Failures are logged.
   */
  forgotPassword(email: string, client: ClientInfo): void {
    this.later.run(
      () => this.sendResetLink(email, client),
      (error: unknown) =>
        this.logger.error({ err: error, requestId: client.requestId }, 'forgot-password: the reset link could not be queued'),
    );
  }

  /** Resolves once the work started after earlier answers (reset links) has finished. */
  settled(): Promise<void> {
    return this.later.settled();
  }

  private async sendResetLink(email: string, client: ClientInfo): Promise<void> {
    const user = await findUserByEmail(this.db, normalizeEmail(email));
    if (!user || user.deleted_at !== null || !user.is_active) return;
    const sent = await this.transact(async (trx) => {
      const recent = await recentAccountTokens(trx, user.id, 'password_reset', this.config.passwordResetMailIntervalSeconds);
      if (recent.withinSeconds > 0 || recent.withinHour >= this.config.passwordResetMailsPerHour) return false;
      await this.mail.sendPasswordReset(trx, user);
      await recordEvent(trx, { type: 'password.reset_requested', actor: null, subject: user.id, origin: client });
      return true;
    });
    if (sent) this.mail.flush();
    else
      this.logger.info(
        { userId: user.id, requestId: client.requestId },
        'forgot-password: no new link, one was sent to this account recently',
      );
  }

  /**
   * Sets a new password with a reset token; every session ends and the e-mail counts as verified.
   * The link proved the mailbox: an account whose address was never verified before also loses
   * every other way in set up before (keys, factors, linked identities).
   */
  async resetPassword(token: string, newPassword: string, client: ClientInfo): Promise<void> {
    checkNewPassword(newPassword, 'body.new_password');
    await this.breached?.refuse(newPassword, 'body.new_password');
    const passwordHash = await this.passwords.hash(newPassword, clientCaller(client));
    const email = await this.transact(async (trx) => {
      const owner = await consumeAccountToken(trx, sha256(token), 'password_reset');
      if (!owner) throw new InvalidToken();
      // Refused before anything is written: the transaction rolls back and the token stays usable.
      checkNotEmail(newPassword, owner.email, 'body.new_password');
      const before = await findUserById(trx, owner.user_id);
      if (!before || before.deleted_at !== null || before.email !== owner.email) throw new InvalidToken();
      await this.mailbox.prove(trx, before, 'password_reset', client);
      const user = await updateLiveUser(trx, owner.user_id, { password_hash: passwordHash, email_verified: true });
      if (!user || user.email !== owner.email) throw new InvalidToken();
      await revokeUserSessions(trx, user.id);
      await queueBackchannelLogouts(trx, { userId: user.id });
      await endUserOidcRecords(trx, user.id);
      await this.mail.sendPasswordChangedNotice(trx, user, 'reset');
      await recordEvent(trx, { type: 'password.reset_completed', actor: user.id, subject: user.id, origin: client });
      return user.email;
    });
    this.mail.flush();
    // The owner has proved the address: the account-wide lock, and this client's, are lifted.
    await this.loginGuard?.clear(email, client.ip);
  }

  /**
   * Marks the address verified or, for the link of a pending change, moves the account to the new
   * address (409 if another account has taken it meanwhile). A token for an address the user
   * neither has nor asked for any more is void.
   */
  async verifyEmail(token: string, client: ClientInfo): Promise<UserRow> {
    try {
      return await this.transact(async (trx) => {
        const owner = await consumeAccountToken(trx, sha256(token), 'email_verification');
        if (!owner) throw new InvalidToken();
        const current = await findUserById(trx, owner.user_id);
        if (!current || current.deleted_at !== null) throw new InvalidToken();
        if (current.pending_email === owner.email) {
          const holder = await findUserByEmail(trx, owner.email);
          if (holder && holder.id !== current.id) throw new Conflict('Email already registered');
          const user = await updateLiveUser(trx, current.id, { email: owner.email, pending_email: null, email_verified: true });
          if (!user) throw new InvalidToken();
          await recordEvent(trx, {
            type: 'email.verified',
            actor: user.id,
            subject: user.id,
            details: { email_changed: true },
            origin: client,
          });
          await joinByDomain(trx, user, client);
          return user;
        }
        if (current.email !== owner.email) throw new InvalidToken();
        const user = await updateLiveUser(trx, current.id, { email_verified: true });
        if (!user) throw new InvalidToken();
        await recordEvent(trx, { type: 'email.verified', actor: user.id, subject: user.id, origin: client });
        await joinByDomain(trx, user, client);
        return user;
      });
    } catch (error) {
      // Another account took the address between the check and the update.
      if (isUniqueViolation(error)) throw new Conflict('Email already registered');
      throw error;
    }
  }

  /**
   * While a change of address is pending, sends a new link to the new address (voiding the earlier
   * one; the current address is not told again). Otherwise sends a new link to the current address,
   * or 409 when it is already verified.
   */
  async resendVerification(principal: Principal): Promise<void> {
    const { user } = principal;
    if (user.pending_email !== null) {
      const pending = user.pending_email;
      await this.transact((trx) => this.mail.sendEmailChange(trx, user, pending, false));
    } else {
      if (user.email_verified) throw new Conflict('Email is already verified');
      await this.transact((trx) => this.mail.sendVerification(trx, user));
    }
    this.mail.flush();
  }

  listSessions(principal: Principal): Promise<SessionRow[]> {
    return listLiveSessions(this.db, principal.user.id);
  }

  async revokeSession(principal: Principal, sessionId: string): Promise<void> {
    const id = principal.user.id;
    await this.transact(async (trx) => {
      if (!(await revokeUserSession(trx, { userId: id, sessionId, actor: id, origin: principal.client })))
        throw new NotFound('Session not found');
    });
  }
}
