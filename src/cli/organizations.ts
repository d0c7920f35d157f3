import { isEmailAddress, normalizeEmail } from '../email-address.js';
import { DomainError, Validation } from '../errors.js';
import { checkedSlug } from '../organizations/organizations.js';
import { allowArguments, allowOptions, CommandError, UsageError, type Command, type Context, type Invocation } from './command.js';
import { commandServices } from './services.js';

const ACTIONS = ['create', 'add-member', 'invite'] as const;
type Action = (typeof ACTIONS)[number];

/**
 * `organizations create --name --slug --owner-email`, `organizations add-member --slug --email
 * --role` and `organizations invite --slug --email --role`: an operator's way to make an
 * organisation and to put people in it, or to invite someone who has no account yet, recorded in the
 * audit trail and sent to webhooks as the API's changes are.
 */
export function organizationsCommand(invocation: Invocation): Command {
  const [action, ...rest] = invocation.rest;
  if (!ACTIONS.includes(action as Action)) throw new UsageError(`organizations takes ${ACTIONS.join(', ')}`);
  const words = { ...invocation, rest };
  allowArguments(words, 0);
  const { name, slug, email, role } = invocation.options;
  const ownerEmail = invocation.options['owner-email'];
  if (action === 'create') {
    allowOptions(words, 'name', 'slug', 'owner-email');
    if (name === undefined || slug === undefined || ownerEmail === undefined) {
      throw new UsageError('organizations create needs --name <name> --slug <slug> --owner-email <e-mail>');
    }
    const input = { name, slug: usable(() => checkedSlug(slug, '--slug')) };
    const owner = address(ownerEmail, '--owner-email');
    return command(async (context) => {
      const { organizations } = commandServices(context);
      const user = await liveUser(context, owner);
      const created = await organizations.createForOwner(user.id, input);
      context.io.stdout.write(`created organization ${created.id} (${created.slug}) owned by user ${user.id} (${user.email})\n`);
    });
  }
  allowOptions(words, 'slug', 'email', 'role');
  if (slug === undefined || email === undefined || role === undefined) {
    throw new UsageError(`organizations ${action} needs --slug <slug> --email <e-mail> --role <role>`);
  }
  const member = address(email, '--email');
  if (action === 'invite') {
    return command(async (context) => {
      const { invitations } = commandServices(context);
      const invitation = await invitations.createByOperator(slug, { email: member, role });
      context.io.stdout.write(
        `invited ${invitation.email} to ${invitation.organization_slug} as ${invitation.role}: invitation ${invitation.id}, ` +
          `mailed by the running service, valid until ${invitation.expires_at.toISOString()}\n`,
      );
    });
  }
  return command(async (context) => {
    const { organizations } = commandServices(context);
    const user = await liveUser(context, member);
    const done = await organizations.addMember(slug, user.id, role);
    const what = { added: 'added', changed: 'gave', unchanged: 'already had' }[done];
    const tail = done === 'added' ? ` to ${slug} as ${role}` : ` the role ${role} in ${slug}`;
    context.io.stdout.write(`${what} user ${user.id} (${user.email})${tail}\n`);
  });
}

function command(run: (context: Context) => Promise<void>): Command {
  return {
    migrated: true,
    async run(context) {
      try {
        await run(context);
      } catch (error) {
        // The rules' refusals (a taken slug, the last owner, an unknown role) are the operator's to read.
        if (error instanceof Validation) throw new CommandError(error.details.map((d) => `${d.field} ${d.message}`).join('; '));
        if (error instanceof DomainError) throw new CommandError(error.message);
        throw error;
      }
    },
  };
}

function usable<T>(check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof Validation) throw new UsageError(error.details.map((d) => `${d.field} ${d.message}`).join('; '));
    throw error;
  }
}

function address(value: string, option: string): string {
  if (!isEmailAddress(value.trim())) throw new UsageError(`${option} takes an e-mail address, got "${value}"`);
  return normalizeEmail(value);
}

async function liveUser(context: Context, email: string) {
  const user = await commandServices(context).users.find({ email });
  if (!user || user.deleted_at !== null) throw new CommandError(`no user with e-mail ${email}`);
  return user;
}
