import type { Context } from './command.js';
import { transactions } from '../db/transaction.js';
import { Housekeeping } from '../infra/housekeeping.js';
import { OauthClients } from '../oidc/clients.js';
import { createTransport } from '../mail/transport.js';
import { Outbox } from '../infra/outbox.js';
import { createLogger } from '../logger.js';
import { AccountMail } from '../mail/account-mail.js';
import { CurrentPassword } from '../passwords/current-password.js';
import { PasswordHasher } from '../passwords/passwords.js';
import { UserImport } from '../user-import/user-import.js';
import { UserService } from '../users/users.js';
import { OrganizationInvitations } from '../organizations/invitations.js';
import { Organizations } from '../organizations/organizations.js';

/** The commands print what they did; the services' own log lines would only repeat it. */
const QUIET = createLogger({ level: 'silent' });

/** The services the commands act through, on the command's database; nothing is started. */
export function commandServices({ db, config }: Pick<Context, 'db' | 'config'>): {
  users: UserService;
  imports: UserImport;
  housekeeping: Housekeeping;
  oauthClients: OauthClients;
  organizations: Organizations;
  invitations: OrganizationInvitations;
} {
  const transact = transactions(db);
  // A command hashes one password at a time, with nothing queued behind it.
  const passwords = new PasswordHasher({ policy: config.passwords, concurrency: 1, maxWaiting: 0 });
  const outbox = new Outbox(db, config.mail, config.secret.key, createTransport(config.mail, QUIET), QUIET);
  const mail = new AccountMail(config.account, outbox);
  const organizations = new Organizations(db, transact, config.organizations, config.pagination);
  return {
    users: new UserService(db, config.pagination, mail, passwords, transact, new CurrentPassword(passwords, transact)),
    imports: new UserImport(transact),
    housekeeping: new Housekeeping(db, config.housekeeping, config.audit, QUIET),
    oauthClients: new OauthClients(db, transact, config.secret.key, config.providers.allowPrivateUrls, config.impersonation.enabled),
    organizations,
    invitations: new OrganizationInvitations(db, transact, outbox, organizations, config, Date.now),
  };
}
