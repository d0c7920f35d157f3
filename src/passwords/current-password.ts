import type { Transact } from '../db/transaction.js';
import type { UserRow } from '../db/types.js';
import { InvalidPassword } from '../errors.js';
import { recordEvent } from '../audit/audit-events.js';
import { countedCheck, type LoginGuard } from '../sessions/login-guard.js';
import { userCaller, type PasswordHasher } from './passwords.js';
import type { ClientInfo } from '../principal.js';

/**
 * The proof a signed-in user gives before changing their own credentials: their current password.
 * A wrong one counts as a failed login for the account lockout, so that a stolen access token
 * cannot be used to guess the password faster than the sign-in form allows.
 */
export class CurrentPassword {
  constructor(
    private readonly passwords: PasswordHasher,
    private readonly transact: Transact,
    /** Absent when rate limiting is off. */
    private readonly loginGuard?: LoginGuard,
  ) {}

  /** Resolves when `password` is the user's current one; throws 400 INVALID_PASSWORD (or 429 while locked). */
  async confirm(user: Pick<UserRow, 'id' | 'email' | 'password_hash'>, password: string, client: ClientInfo): Promise<void> {
    const { valid, locked } = await countedCheck(this.loginGuard, user.email, client.ip, () =>
      this.passwords.verify(password, user.password_hash, userCaller(user.id)),
    );
    if (valid) return;
    await this.transact(async (trx) => {
      await recordEvent(trx, {
        type: 'login.failed',
        actor: user.id,
        subject: user.id,
        details: { reason: 'wrong_current_password' },
        origin: client,
      });
      if (locked)
        await recordEvent(trx, { type: 'login.locked', actor: null, subject: user.id, details: { scope: locked }, origin: client });
    });
    throw new InvalidPassword();
  }
}
