import { randomBytes } from 'node:crypto';
import type { AccountConfig } from '../config/index.js';
import { insertAccountToken, voidAccountTokens } from '../users/account-token-repository.js';
import type { Executor, TokenPurpose, UserRow } from '../db/types.js';
import type { Mail } from './transport.js';
import type { Outbox } from '../infra/outbox.js';
import {
  emailChangedMail,
  emailChangeMail,
  emailChangeRequestedMail,
  impersonationNoticeMail,
  newSignInMethodMail,
  passwordChangedMail,
  passwordResetMail,
  verificationMail,
  type NewSignInMethod,
  type PasswordChange,
} from './templates.js';
import type { ClientInfo } from '../principal.js';
import { sha256 } from '../sessions/tokens.js';

type Recipient = Pick<UserRow, 'id' | 'email' | 'name'>;

/** An opaque token: 32 random bytes, base64url. Only its SHA-256 is stored. */
function newToken(): { token: string; hash: string } {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: sha256(token) };
}

/**
 * Issues reset and verification tokens and queues the e-mail that carries each, in the caller's
 * transaction: the token and its message exist together or not at all. A new token of a kind
 * voids the user's earlier ones.
 */
export class AccountMail {
  constructor(
    private readonly config: AccountConfig,
    private readonly outbox: Outbox,
  ) {}

  sendVerification(db: Executor, user: Recipient): Promise<void> {
    const hours = this.config.emailVerifyExpireHours;
    return this.send(db, user, 'email_verification', hours * 3600_000, (token) =>
      verificationMail(this.config.appUrl, user.email, user.name, token, hours),
    );
  }

  /**
   * A link to the address the user asked to move to (voiding the links of earlier requests, but not
   * one for the current address) and, unless `notify` is false, a notice to the current address.
   */
  async sendEmailChange(db: Executor, user: Recipient, newEmail: string, notify = true): Promise<void> {
    const hours = this.config.emailVerifyExpireHours;
    const { token, hash } = newToken();
    await voidAccountTokens(db, user.id, 'email_verification', { exceptEmail: user.email });
    await insertAccountToken(db, {
      userId: user.id,
      purpose: 'email_verification',
      tokenHash: hash,
      email: newEmail,
      expiresAt: new Date(Date.now() + hours * 3600_000),
    });
    await this.outbox.enqueue(db, emailChangeMail(this.config.appUrl, newEmail, user.name, token, hours));
    if (notify) await this.outbox.enqueue(db, emailChangeRequestedMail(user.email, user.name, newEmail));
  }

  /** Voids the links of a pending change of address; a link for the current address stays. */
  async cancelEmailChange(db: Executor, user: Recipient): Promise<void> {
    await voidAccountTokens(db, user.id, 'email_verification', { exceptEmail: user.email });
  }

  /** Tells the previous address that an administrator moved the account to another one. */
  async sendEmailChangedNotice(db: Executor, user: Recipient, previousEmail: string): Promise<void> {
    await this.outbox.enqueue(db, emailChangedMail(previousEmail, user.name, user.email));
  }

  /** Tells the account's address that its password changed. */
  async sendPasswordChangedNotice(db: Executor, user: Recipient, how: PasswordChange): Promise<void> {
    await this.outbox.enqueue(db, passwordChangedMail(user.email, user.name, how));
  }

  /** Tells the account's address that a way to sign in or to act as the user was added, and from where. */
  async sendNewSignInMethodNotice(db: Executor, user: Recipient, method: NewSignInMethod, client: ClientInfo): Promise<void> {
    const origin = { at: new Date(), ip: client.ip, userAgent: client.userAgent };
    await this.outbox.enqueue(db, newSignInMethodMail(user.email, user.name, method, origin));
  }

  /** Tells the account's address that an administrator started acting as the user, for `minutes`. */
  async sendImpersonationNotice(db: Executor, user: Recipient, admin: Pick<UserRow, 'name' | 'email'>, minutes: number): Promise<void> {
    await this.outbox.enqueue(db, impersonationNoticeMail(user.email, user.name, admin, minutes, new Date()));
  }

  sendPasswordReset(db: Executor, user: Recipient): Promise<void> {
    const minutes = this.config.passwordResetExpireMinutes;
    return this.send(db, user, 'password_reset', minutes * 60_000, (token) =>
      passwordResetMail(this.config.appUrl, user.email, user.name, token, minutes),
    );
  }

  /** Call once the transaction that queued mail has committed. */
  flush(): void {
    this.outbox.wake();
  }

  private async send(
    db: Executor,
    user: Recipient,
    purpose: TokenPurpose,
    lifetimeMs: number,
    compose: (token: string) => Mail,
  ): Promise<void> {
    const { token, hash } = newToken();
    await voidAccountTokens(db, user.id, purpose);
    await insertAccountToken(db, {
      userId: user.id,
      purpose,
      tokenHash: hash,
      email: user.email,
      expiresAt: new Date(Date.now() + lifetimeMs),
    });
    await this.outbox.enqueue(db, compose(token));
  }
}
