import type { Context } from './command';
import { createLogger } from '../logger';
import { AccountMail } from '../services/account-mail';
import { AuditTrail } from '../services/audit';
import { CurrentPassword } from '../services/current-password';
import { Housekeeping } from '../services/housekeeping';
import { createTransport, Outbox } from '../services/outbox';
import { PasswordHasher } from '../services/passwords';
import { UserService } from '../services/users';

/** The commands print what they did; the services' own log lines would only repeat it. */
const QUIET = createLogger({ level: 'silent' });

/** The services the commands act through, on the command's database; nothing is started. */
export function commandServices({ db, config }: Pick<Context, 'db' | 'config'>): { users: UserService; housekeeping: Housekeeping } {
  const audit = new AuditTrail(db, config.audit, config.pagination, QUIET);
  // A command hashes one password at a time, with nothing queued behind it.
  const passwords = new PasswordHasher({ cost: config.passwords.bcryptCost, concurrency: 1, maxWaiting: 0 });
  const outbox = new Outbox(db, config.mail, config.secret.key, createTransport(config.mail, QUIET), QUIET);
  const mail = new AccountMail(config.account, outbox);
  return {
    users: new UserService(db, config.pagination, mail, passwords, audit, new CurrentPassword(passwords, audit)),
    housekeeping: new Housekeeping(db, config.housekeeping, QUIET),
  };
}
