import type { MailboxClaim } from '../mailbox/claim.js';
import type { BreachedPasswords } from '../passwords/breached-passwords.js';
import type { Core } from '../wiring/core.js';
import { AccountService } from './account.js';
import { UserService } from './users.js';

/** A person's own account (profile, password, e-mail) and the admins' user management. */
export function usersRoom(
  core: Pick<Core, 'config' | 'db' | 'mail' | 'passwords' | 'transact' | 'logger' | 'currentPassword' | 'loginGuard'>,
  needs: { breached: BreachedPasswords | undefined; mailbox: MailboxClaim },
) {
  const { config, db, mail, passwords, transact, logger, currentPassword, loginGuard } = core;
  return {
    account: new AccountService(
      db,
      config.account,
      mail,
      passwords,
      transact,
      logger,
      currentPassword,
      needs.mailbox,
      loginGuard,
      needs.breached,
    ),
    users: new UserService(db, config.pagination, mail, passwords, transact, currentPassword, needs.breached),
  };
}
