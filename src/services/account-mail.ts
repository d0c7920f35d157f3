import { randomBytes } from 'node:crypto';
import type { Config } from '../config';
import { insertAccountToken, voidAccountTokens } from '../db/account-tokens';
import type { Executor, UserRow } from '../db/types';
import { passwordResetMail, verificationMail } from './mail-templates';
import type { Outbox } from './outbox';
import { sha256 } from './tokens';

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
    private readonly config: Config,
    private readonly outbox: Outbox,
  ) {}

  async sendVerification(db: Executor, user: Pick<UserRow, 'id' | 'email' | 'name'>): Promise<void> {
    const { token, hash } = newToken();
    const hours = this.config.emailVerifyExpireHours;
    await voidAccountTokens(db, user.id, 'email_verification');
    await insertAccountToken(db, {
      userId: user.id,
      purpose: 'email_verification',
      tokenHash: hash,
      email: user.email,
      expiresAt: new Date(Date.now() + hours * 3600_000),
    });
    await this.outbox.enqueue(db, verificationMail(this.config.appUrl, user.email, user.name, token, hours));
  }

  async sendPasswordReset(db: Executor, user: Pick<UserRow, 'id' | 'email' | 'name'>): Promise<void> {
    const { token, hash } = newToken();
    const minutes = this.config.passwordResetExpireMinutes;
    await voidAccountTokens(db, user.id, 'password_reset');
    await insertAccountToken(db, {
      userId: user.id,
      purpose: 'password_reset',
      tokenHash: hash,
      email: user.email,
      expiresAt: new Date(Date.now() + minutes * 60_000),
    });
    await this.outbox.enqueue(db, passwordResetMail(this.config.appUrl, user.email, user.name, token, minutes));
  }

  /** Call once the transaction that queued mail has committed. */
  flush(): void {
    this.outbox.wake();
  }
}
