import { realpathSync } from 'node:fs';
import { parseArgs, types } from 'node:util';
import { ConfigError, dataDirSecret, loadConfig, processEnvironment } from '../config/index.js';
import { DatabaseConnectionError } from '../db/connection-check.js';
import { DataDirRefused } from '../db/data-dir.js';
import { openDatabase } from '../db/database.js';
import { openMigratedDatabase } from '../db/migrate.js';
import { CommandError, UsageError, type CliIo, type Command, type Context, type Invocation, type Options } from './command.js';
import { createAdminCommand } from './create-admin.js';
import { importUsersCommand } from './import-users.js';
import { migrateCommand } from './migrate.js';
import { oauthClientsCommand } from './oauth-clients.js';
import { organizationsCommand } from './organizations.js';
import { purgeCommand } from './purge.js';
import { revokeSessionsCommand } from './revoke-sessions.js';

export type { CliIo } from './command.js';

export const USAGE = `Usage: npm run cli -- <command> [options]

Commands:
  migrate up                 apply every pending migration
  migrate down               undo the most recent migration
  migrate status             list every migration, applied or pending
  create-admin [--email <e-mail>] [--name <name>]
                             create an admin account (e-mail defaults to ADMIN_EMAIL, name to
                             "Administrator"); the password comes from ADMIN_PASSWORD, else from
                             the terminal without echo, else from the first line of stdin
  revoke-sessions --user <id|e-mail>
                             sign a user out everywhere; prints how many sessions ended
  purge                      purge spent sessions, tokens and mail now; prints the counts
  import-users FILE.jsonl    import users with their password hashes, one JSON object per line
                             ({"email", "name", "password_hash", "role"?, "email_verified"?});
                             lists the rows not created, and exits 1 if any was invalid
  oauth-clients list         the OpenID Connect provider's clients, one a line
  oauth-clients create --name <name> --type confidential|public [--redirect-uri <uri>]...
                [--post-logout-redirect-uri <uri>]... [--grant <grant type>]... [--first-party]
                             add a client; prints its client_id, and its secret once
  oauth-clients rotate-secret <client_id>
                             a new secret for a confidential client, printed once
  oauth-clients delete <client_id>
                             remove a client with its grants and tokens
  organizations create --name <name> --slug <slug> --owner-email <e-mail>
                             create an organisation owned by that user; prints its id
  organizations add-member --slug <slug> --email <e-mail> --role <role>
                             add the user to the organisation with the role, or give a member it
  organizations invite --slug <slug> --email <e-mail> --role <role>
                             invite the address to the organisation with the role, as the API's
                             invitations; the running service mails the link
  help                       show this text

The database is the server's: DATABASE_URL, or the embedded one in DATA_DIR. The embedded
database serves one process: while the server runs on DATA_DIR, a command waits up to
DATA_DIR_WAIT_SECONDS (30) for it to stop, then gives up. So is the key: SECRET_KEY, or in
development without it the key the server keeps in DATA_DIR.
`;

/** Each command checks its arguments before anything touches the database. */
const COMMANDS: Record<string, (invocation: Invocation) => Command> = {
  migrate: migrateCommand,
  'create-admin': createAdminCommand,
  'revoke-sessions': revokeSessionsCommand,
  purge: purgeCommand,
  'import-users': importUsersCommand,
  'oauth-clients': oauthClientsCommand,
  organizations: organizationsCommand,
};

/** Runs one command and returns the exit code: 0 done, 1 failed, 2 bad usage. */
export async function main(argv: string[], io: CliIo): Promise<number> {
  let parsed: { positionals: string[]; values: Options };
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        email: { type: 'string' },
        name: { type: 'string' },
        user: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        type: { type: 'string' },
        'redirect-uri': { type: 'string', multiple: true },
        'post-logout-redirect-uri': { type: 'string', multiple: true },
        grant: { type: 'string', multiple: true },
        'first-party': { type: 'boolean' },
        slug: { type: 'string' },
        'owner-email': { type: 'string' },
        role: { type: 'string' },
      },
    });
  } catch (error) {
    return usageError(io, (error as Error).message);
  }
  const { positionals, values } = parsed;
  const [name, ...rest] = positionals;
  if (values.help || name === undefined || name === 'help') {
    io.stdout.write(USAGE);
    return 0;
  }
  try {
    const build = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (!build) throw new UsageError(`unknown command "${name}"`);
    const command = build({ name, rest, options: values, env: io.env });
    // ADMIN_EMAIL and ADMIN_PASSWORD are create-admin's input here, not the server's start-up admin.
    const config = loadConfig({ ...io.env, ADMIN_EMAIL: undefined, ADMIN_PASSWORD: undefined }, false, dataDirSecret);
    await withDatabase(config, io, command.migrated, (database) => command.run({ ...database, config, io }));
    return 0;
  } catch (error) {
    if (error instanceof UsageError) return usageError(io, error.message);
    io.stderr.write(`error: ${describe(error)}\n`);
    if (io.env.LOG_LEVEL?.trim().toLowerCase() === 'debug' && isError(error) && !(error instanceof CommandError)) {
      io.stderr.write(`${error.stack ?? ''}\n`);
    }
    return 1;
  }
}

async function withDatabase(
  config: Context['config'],
  io: CliIo,
  migrated: boolean,
  run: (database: Pick<Context, 'db' | 'kind' | 'applied'>) => Promise<void>,
): Promise<void> {
  const options = {
    waitForDataDirMs: config.database.dataDirWaitSeconds * 1000,
    onDataDirWait: (pid: number) =>
      io.stderr.write(
        `DATA_DIR ${config.database.dataDir} is in use by process ${pid}; waiting up to ${config.database.dataDirWaitSeconds} s for it to stop\n`,
      ),
  };
  const database = migrated
    ? await openMigratedDatabase(config.database, options)
    : { ...(await openDatabase(config.database, options)), applied: [] };
  try {
    await run(database);
  } finally {
    await database.db.destroy();
  }
}

function usageError(io: CliIo, message: string): number {
  io.stderr.write(`error: ${message}\n\n${USAGE}`);
  return 2;
}

/** Any Error, including one made in another realm (a VM context) that `instanceof` would miss. */
const isError = (value: unknown): value is Error => value instanceof Error || types.isNativeError(value);

/** One line that says what went wrong, causes included; never a stack. */
function describe(error: unknown): string {
  if (error instanceof ConfigError || error instanceof DatabaseConnectionError || error instanceof DataDirRefused) return error.message;
  if (!isError(error)) return String(error);
  // pg reports a refused connection to several addresses as an AggregateError with no message.
  const inner = (error as Partial<AggregateError>).errors;
  const own = error.message || (Array.isArray(inner) && inner.length > 0 ? describe(inner[0]) : '') || error.name;
  return error.cause === undefined ? own : `${own}: ${describe(error.cause)}`;
}

// Run as a program (`node dist/src/cli/index.js`), not imported.
if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === import.meta.filename) {
  // The same configuration as the server, .env file included.
  void main(process.argv.slice(2), {
    stdin: process.stdin,
    stdout: process.stdout,
    stderr: process.stderr,
    env: processEnvironment(),
  }).then((code) => {
    process.exitCode = code;
  });
}
