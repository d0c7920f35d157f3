import { isEmailAddress, normalizeEmail } from '../email-address.js';
import { Validation } from '../errors.js';
import { checkNewPassword, MIN_PASSWORD_LENGTH } from '../passwords/passwords.js';
import { allowArguments, allowOptions, CommandError, UsageError, type Command, type Invocation } from './command.js';
import { readPassword } from './password-input.js';
import { commandServices } from './services.js';

const MAX_NAME_LENGTH = 100;

/**
 * `create-admin [--email <e-mail>] [--name <name>]`: creates an admin account, verified. An e-mail
 * that already has an account is refused rather than promoted: a mistyped address must not hand
 * someone else's account the admin role.
 */
export function createAdminCommand(invocation: Invocation): Command {
  allowOptions(invocation, 'email', 'name');
  allowArguments(invocation, 0);
  const { options, env } = invocation;
  const email = normalizeEmail(options.email ?? env.ADMIN_EMAIL ?? '');
  if (email === '') throw new UsageError('create-admin needs --email (or ADMIN_EMAIL)');
  if (!isEmailAddress(email)) throw new UsageError(`"${email}" is not an e-mail address`);
  const name = (options.name ?? 'Administrator').trim();
  if (name === '' || name.length > MAX_NAME_LENGTH) throw new UsageError(`--name must be 1 to ${MAX_NAME_LENGTH} characters`);

  return {
    migrated: true,
    async run(context) {
      const { users } = commandServices(context);
      const taken = () => new CommandError(`an account with the e-mail ${email} already exists; nothing was changed`);
      // Asked before the password, so that nobody types one for nothing.
      if (await users.find({ email })) throw taken();
      const password = await readPassword(context.io);
      if (password.length < MIN_PASSWORD_LENGTH) throw new CommandError(`the password must be at least ${MIN_PASSWORD_LENGTH} characters`);
      try {
        checkNewPassword(password, 'password', email);
      } catch (error) {
        if (error instanceof Validation && error.details[0]) throw new CommandError(`the password ${error.details[0].message}`);
        throw error;
      }
      const admin = await users.createAdmin({ email, name, password, source: 'cli' });
      if (!admin) throw taken();
      context.io.stdout.write(`created the admin ${admin.email} (id ${admin.id})\n`);
    },
  };
}
