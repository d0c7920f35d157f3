import { Validation } from '../errors.js';
import type { ClientInput, ClientView, GrantType } from '../oidc/clients.js';
import { allowArguments, allowOptions, CommandError, UsageError, type Command, type Context, type Invocation } from './command.js';
import { commandServices } from './services.js';

const ACTIONS = ['list', 'create', 'rotate-secret', 'delete'] as const;
type Action = (typeof ACTIONS)[number];

/**
 * `oauth-clients list | create | rotate-secret <client_id> | delete <client_id>`: the OpenID
 * Connect provider's clients, as `/api/oauth/clients` manages them, recorded in the audit trail.
 */
export function oauthClientsCommand(invocation: Invocation): Command {
  const [action, ...rest] = invocation.rest;
  if (!ACTIONS.includes(action as Action)) throw new UsageError(`oauth-clients takes ${ACTIONS.join(', ')}`);
  const words = { ...invocation, rest };
  switch (action as Action) {
    case 'list':
      allowOptions(words);
      allowArguments(words, 0);
      return command(async (context) => {
        for (const client of await clients(context).list(null)) context.io.stdout.write(`${line(client)}\n`);
      });
    case 'create': {
      allowOptions(words, 'name', 'type', 'redirect-uri', 'post-logout-redirect-uri', 'grant', 'first-party');
      allowArguments(words, 0);
      const { name, type } = invocation.options;
      if (name === undefined) throw new UsageError('oauth-clients create needs --name <name>');
      if (type !== 'confidential' && type !== 'public')
        throw new UsageError('oauth-clients create needs --type confidential or --type public');
      const input: ClientInput = {
        name,
        type: type,
        redirect_uris: invocation.options['redirect-uri'] ?? [],
        post_logout_redirect_uris: invocation.options['post-logout-redirect-uri'] ?? [],
        grant_types: invocation.options.grant as GrantType[] | undefined,
        first_party: invocation.options['first-party'] ?? false,
      };
      return command(async (context) => {
        const created = await clients(context).create(null, input);
        context.io.stdout.write(`${line(created)}\n`);
        if (created.client_secret) context.io.stdout.write(`client_secret ${created.client_secret} (shown this once)\n`);
      });
    }
    case 'rotate-secret':
    case 'delete': {
      allowOptions(words);
      allowArguments(words, 1);
      const [clientId] = rest;
      if (clientId === undefined) throw new UsageError(`oauth-clients ${action} needs a client_id`);
      return command(async (context) => {
        if (action === 'delete') {
          await clients(context).remove(null, clientId);
          context.io.stdout.write(`deleted the client ${clientId}\n`);
        } else {
          const { client_secret: secret } = await clients(context).rotateSecret(null, clientId);
          context.io.stdout.write(`client_secret ${secret} (shown this once)\n`);
        }
      });
    }
  }
}

const clients = (context: Context) => commandServices(context).oauthClients;

function line(client: ClientView): string {
  const flags = [client.type, client.first_party ? 'first party' : '', client.registered ? 'registered' : ''].filter((f) => f !== '');
  return `${client.client_id}  ${client.name} (${flags.join(', ')})  ${client.redirect_uris.join(' ')}`.trimEnd();
}

/** The command's run, with the rules' refusals said in the command line's words. */
function command(run: (context: Context) => Promise<void>): Command {
  return {
    migrated: true,
    async run(context) {
      if (context.config.secret.source === 'random')
        throw new CommandError(
          'SECRET_KEY is not set and DATA_DIR keeps no key (memory://): client secrets are sealed with it, so give the command the server’s SECRET_KEY',
        );
      try {
        await run(context);
      } catch (error) {
        if (error instanceof Validation)
          throw new CommandError(error.details.map((d) => `${d.field.replace(/^body\./, '')} ${d.message}`).join('; '));
        if (error instanceof Error && error.name === 'NotFound') throw new CommandError('no client with that client_id');
        throw error;
      }
    },
  };
}
