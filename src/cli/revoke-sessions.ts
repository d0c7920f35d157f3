import { isEmailAddress, normalizeEmail } from '../email-address.js';
import type { UserRef } from '../users/users.js';
import { allowArguments, allowOptions, CommandError, UsageError, type Command, type Invocation } from './command.js';
import { commandServices } from './services.js';

/** `revoke-sessions --user <id|e-mail>`: signs a user out everywhere, recorded in the audit trail. */
export function revokeSessionsCommand(invocation: Invocation): Command {
  allowOptions(invocation, 'user');
  allowArguments(invocation, 0);
  if (invocation.options.user === undefined) throw new UsageError('revoke-sessions needs --user <id|e-mail>');
  const ref = userRef(invocation.options.user);
  return {
    migrated: true,
    async run(context) {
      const { users } = commandServices(context);
      const user = await users.find(ref);
      if (!user) throw new CommandError(`no user with ${'id' in ref ? `id ${ref.id}` : `e-mail ${ref.email}`}`);
      const revoked = await users.revokeAllSessions(user.id, 'cli');
      context.io.stdout.write(`revoked ${revoked} session${revoked === 1 ? '' : 's'} of user ${user.id} (${user.email})\n`);
    },
  };
}

function userRef(value: string): UserRef {
  if (/^\d+$/.test(value) && Number.isSafeInteger(Number(value))) return { id: Number(value) };
  if (isEmailAddress(value.trim())) return { email: normalizeEmail(value) };
  throw new UsageError(`--user takes a user id or an e-mail address, got "${value}"`);
}
