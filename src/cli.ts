import { parseArgs, types } from 'node:util';
import dotenv from 'dotenv';
import type { Kysely } from 'kysely';
import { ConfigError, hashPolicyOf, loadConfig, type Config } from './config';
import { openDatabase } from './db/database';
import { checked, migrateToLatest, migrator } from './db/migrate';
import { listLiveSessions, revokeUserSessions } from './db/sessions';
import type { Database, UserRow } from './db/types';
import { findUserByEmail, findUserById } from './db/users';
import { ApiError } from './http/errors';
import { createLogger } from './logger';
import { AuditTrail } from './services/audit';
import { normalizeEmail } from './services/auth';
import { Housekeeping } from './services/housekeeping';
import { checkNewPassword, MIN_PASSWORD_LENGTH, PasswordHasher } from './services/passwords';
import { insertAdmin } from './services/users';
import { importUsersCommand } from './cli/import-users';

/** Where the command reads and writes; a process passes its own, tests pass captured ones. */
export interface CliIo {
  stdin: NodeJS.ReadableStream & { isTTY?: boolean; setRawMode?: (raw: boolean) => unknown };
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  env: Record<string, string | undefined>;
}

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
  help                       show this text

The database is the server's: DATABASE_URL, or the embedded one in DATA_DIR (stop the server
first when it uses the embedded database).
`;

/** Bad usage: exit 2 with the usage text. */
class UsageError extends Error {}
/** A clear reason the command could not do its job: exit 1 with this message. */
class CommandError extends Error {}

const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;
const MAX_EMAIL_LENGTH = 254;
const MAX_NAME_LENGTH = 100;
/** The commands print what they did; the services' own log lines would only repeat it. */
const QUIET = createLogger({ logLevel: 'silent' });

type Options = { email?: string; name?: string; user?: string; help?: boolean };

/** Runs one command and returns the exit code: 0 done, 1 failed, 2 bad usage. */
export async function main(argv: string[], io: CliIo): Promise<number> {
  let parsed: { positionals: string[]; values: Options };
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: { email: { type: 'string' }, name: { type: 'string' }, user: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    });
  } catch (error) {
    return usageError(io, (error as Error).message);
  }
  const { positionals, values } = parsed;
  const [command, ...rest] = positionals;
  if (values.help || command === undefined || command === 'help') {
    io.stdout.write(USAGE);
    return 0;
  }
  try {
    const run = commandFor(command, rest, values, io.env);
    const config = loadConfig({ ...io.env, ADMIN_EMAIL: undefined, ADMIN_PASSWORD: undefined });
    await withDatabase(config, (db, kind) => run({ db, kind, config, io }));
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

interface Context {
  db: Kysely<Database>;
  kind: 'postgres' | 'embedded';
  config: Config;
  io: CliIo;
}

type Command = (context: Context) => Promise<void>;

/** Checks the arguments before anything touches the database, and picks the command. */
function commandFor(command: string, rest: string[], options: Options, env: CliIo['env']): Command {
  const allow = (...names: (keyof Options)[]) => {
    const extra = Object.keys(options).filter((name) => !names.includes(name as keyof Options));
    if (extra.length > 0) throw new UsageError(`${command} does not take --${extra[0]}`);
  };
  const noMore = (count: number) => {
    if (rest.length > count) throw new UsageError(`unexpected argument "${rest[count]}"`);
  };
  switch (command) {
    case 'migrate': {
      allow();
      noMore(1);
      const action = rest[0];
      if (action === 'up') return migrateUp;
      if (action === 'down') return migrateDown;
      if (action === 'status') return migrateStatus;
      throw new UsageError(action === undefined ? 'migrate needs up, down or status' : `unknown migrate action "${action}"`);
    }
    case 'create-admin': {
      allow('email', 'name');
      noMore(0);
      const fields = adminFields(options, env);
      return (context) => createAdmin(context, fields);
    }
    case 'revoke-sessions': {
      allow('user');
      noMore(0);
      if (options.user === undefined) throw new UsageError('revoke-sessions needs --user <id|e-mail>');
      const user = userRef(options.user);
      return (context) => revokeSessions(context, user);
    }
    case 'import-users': {
      allow();
      noMore(1);
      const file = rest[0];
      if (file === undefined) throw new UsageError('import-users needs FILE.jsonl');
      return (context) => importUsersCommand(context, file);
    }
    case 'purge':
      allow();
      noMore(0);
      return purge;
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

async function withDatabase(config: Config, run: (db: Kysely<Database>, kind: Context['kind']) => Promise<void>): Promise<void> {
  const { db, kind } = await openDatabase(config);
  try {
    await run(db, kind);
  } finally {
    await db.destroy();
  }
}

// ---------------------------------------------------------------------------------------------
// migrate

async function migrateUp({ db, kind, io }: Context): Promise<void> {
  const { results = [] } = await migrateToLatest(db);
  for (const r of results) io.stdout.write(`applied  ${r.migrationName}\n`);
  io.stdout.write(results.length > 0 ? `migrated the ${kind} database\n` : `the ${kind} database is up to date\n`);
}

async function migrateDown({ db, io }: Context): Promise<void> {
  const { results = [] } = checked(await migrator(db).migrateDown());
  if (results.length === 0) io.stdout.write('no migration is applied; nothing to undo\n');
  for (const r of results) io.stdout.write(`undone   ${r.migrationName}\n`);
}

async function migrateStatus({ db, io }: Context): Promise<void> {
  for (const m of await migrator(db).getMigrations()) {
    io.stdout.write(m.executedAt ? `applied  ${m.name}  ${m.executedAt.toISOString()}\n` : `pending  ${m.name}\n`);
  }
}

// ---------------------------------------------------------------------------------------------
// create-admin

interface AdminFields {
  email: string;
  name: string;
}

function adminFields(options: Options, env: CliIo['env']): AdminFields {
  const email = normalizeEmail(options.email ?? env.ADMIN_EMAIL ?? '');
  if (email === '') throw new UsageError('create-admin needs --email (or ADMIN_EMAIL)');
  if (!EMAIL.test(email) || email.length > MAX_EMAIL_LENGTH) throw new UsageError(`"${email}" is not an e-mail address`);
  const name = (options.name ?? 'Administrator').trim();
  if (name === '' || name.length > MAX_NAME_LENGTH) throw new UsageError(`--name must be 1 to ${MAX_NAME_LENGTH} characters`);
  return { email, name };
}

/**
 * Creates an admin account, verified. An e-mail that already has an account is refused rather
 * than promoted: a mistyped address must not hand someone else's account the admin role.
 */
async function createAdmin(context: Context, { email, name }: AdminFields): Promise<void> {
  const { db, config, io } = context;
  await migrateToLatest(db);
  const taken = () => new CommandError(`an account with the e-mail ${email} already exists; nothing was changed`);
  if (await findUserByEmail(db, email)) throw taken();
  const password = await readPassword(io);
  if (password.length < MIN_PASSWORD_LENGTH) throw new CommandError(`the password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  try {
    checkNewPassword(password, 'password', email);
  } catch (error) {
    if (error instanceof ApiError && error.details?.[0]) throw new CommandError(`the password ${error.details[0].message}`);
    throw error;
  }
  const passwordHash = await new PasswordHasher({ policy: hashPolicyOf(config), concurrency: 1, maxWaiting: 0 }).hash(password);
  const admin = await insertAdmin(new AuditTrail(db, config, QUIET), { email, name, passwordHash, source: 'cli' });
  if (!admin) throw taken();
  io.stdout.write(`created the admin ${admin.email} (id ${admin.id})\n`);
}

/** ADMIN_PASSWORD, else a prompt on a terminal, else the first line of stdin. */
async function readPassword(io: CliIo): Promise<string> {
  if (io.env.ADMIN_PASSWORD) return io.env.ADMIN_PASSWORD;
  if (io.stdin.isTTY && io.stdin.setRawMode) {
    const password = await promptHidden(io, 'Password: ');
    if ((await promptHidden(io, 'Repeat the password: ')) !== password) throw new CommandError('the two passwords differ');
    return password;
  }
  const line = await firstLine(io.stdin);
  if (line === undefined || line === '') {
    throw new CommandError('no password: set ADMIN_PASSWORD, run on a terminal, or write the password to stdin');
  }
  return line;
}

/** Reads a line from a terminal in raw mode, so that what is typed is not echoed. */
function promptHidden(io: CliIo, question: string): Promise<string> {
  const { stdin } = io;
  // Raw mode before the prompt: what is typed as soon as it shows must not be echoed either.
  stdin.setRawMode?.(true);
  io.stderr.write(question);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let typed: string[] = [];
    const finish = (error?: Error) => {
      stdin.off('data', onData);
      stdin.setRawMode?.(false);
      stdin.pause();
      io.stderr.write('\n');
      if (error) reject(error);
      else resolve(typed.join(''));
    };
    const onData = (chunk: string | Buffer) => {
      for (const char of String(chunk)) {
        if (char === '\r' || char === '\n') return finish();
        // Ctrl-C, or Ctrl-D on an empty line: the user gives up.
        if (char === '\u0003' || (char === '\u0004' && typed.length === 0)) return finish(new CommandError('cancelled'));
        if (char === '\u007f' || char === '\b') typed = typed.slice(0, -1);
        else if (char >= ' ') typed.push(char);
      }
    };
    stdin.on('data', onData);
  });
}

/** The first line of a stream, without its line ending; undefined for an empty stream. */
async function firstLine(stream: NodeJS.ReadableStream): Promise<string | undefined> {
  let text = '';
  for await (const chunk of stream) {
    text += String(chunk);
    const end = text.search(/\r?\n/);
    if (end >= 0) return text.slice(0, end);
  }
  return text === '' ? undefined : text;
}

// ---------------------------------------------------------------------------------------------
// revoke-sessions

type UserRef = { id: number } | { email: string };

function userRef(value: string): UserRef {
  if (/^\d+$/.test(value) && Number.isSafeInteger(Number(value))) return { id: Number(value) };
  if (EMAIL.test(value.trim())) return { email: normalizeEmail(value) };
  throw new UsageError(`--user takes a user id or an e-mail address, got "${value}"`);
}

async function revokeSessions({ db, io }: Context, ref: UserRef): Promise<void> {
  await migrateToLatest(db);
  const user: UserRow | undefined = 'id' in ref ? await findUserById(db, ref.id) : await findUserByEmail(db, ref.email);
  if (!user) throw new CommandError(`no user with ${'id' in ref ? `id ${ref.id}` : `e-mail ${ref.email}`}`);
  const revoked = await db.transaction().execute(async (trx) => {
    const live = await listLiveSessions(trx, user.id);
    await revokeUserSessions(trx, user.id);
    return live.length;
  });
  io.stdout.write(`revoked ${revoked} session${revoked === 1 ? '' : 's'} of user ${user.id} (${user.email})\n`);
}

// ---------------------------------------------------------------------------------------------
// purge

async function purge({ db, config, io }: Context): Promise<void> {
  await migrateToLatest(db);
  const { removed, status } = await new Housekeeping(db, config, QUIET).purge();
  for (const [table, count] of Object.entries(removed)) io.stdout.write(`${table.padEnd(16)}${count}\n`);
  if (status === 'busy') io.stdout.write('another process is purging this database now and does the rest\n');
}

// ---------------------------------------------------------------------------------------------

function usageError(io: CliIo, message: string): number {
  io.stderr.write(`error: ${message}\n\n${USAGE}`);
  return 2;
}

/** Any Error, including one made in another realm (a VM context) that `instanceof` would miss. */
const isError = (value: unknown): value is Error => value instanceof Error || types.isNativeError(value);

/** One line that says what went wrong, causes included; never a stack. */
function describe(error: unknown): string {
  if (error instanceof ConfigError) return error.message;
  if (!isError(error)) return String(error);
  // pg reports a refused connection to several addresses as an AggregateError with no message.
  const inner = (error as Partial<AggregateError>).errors;
  const own = error.message || (Array.isArray(inner) && inner.length > 0 ? describe(inner[0]) : '') || error.name;
  return error.cause === undefined ? own : `${own}: ${describe(error.cause)}`;
}

if (require.main === module) {
  // The same configuration as the server, .env file included.
  dotenv.config();
  void main(process.argv.slice(2), { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env }).then((code) => {
    process.exitCode = code;
  });
}
