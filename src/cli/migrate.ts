import { checked, migrator } from '../db/migrate.js';
import { allowArguments, allowOptions, UsageError, type Command, type Invocation } from './command.js';

/** `migrate up|down|status`. */
export function migrateCommand(invocation: Invocation): Command {
  allowOptions(invocation);
  allowArguments(invocation, 1);
  const action = invocation.rest[0];
  if (action === 'up') return up;
  if (action === 'down') return down;
  if (action === 'status') return status;
  throw new UsageError(action === undefined ? 'migrate needs up, down or status' : `unknown migrate action "${action}"`);
}

/** Opening the database migrated is the whole of `up`; it reports what that applied. */
const up: Command = {
  migrated: true,
  async run({ applied, kind, io }) {
    for (const r of applied) io.stdout.write(`applied  ${r.migrationName}\n`);
    io.stdout.write(applied.length > 0 ? `migrated the ${kind} database\n` : `the ${kind} database is up to date\n`);
  },
};

const down: Command = {
  migrated: false,
  async run({ db, io }) {
    const { results = [] } = checked(await migrator(db).migrateDown());
    if (results.length === 0) io.stdout.write('no migration is applied; nothing to undo\n');
    for (const r of results) io.stdout.write(`undone   ${r.migrationName}\n`);
  },
};

const status: Command = {
  migrated: false,
  async run({ db, io }) {
    for (const m of await migrator(db).getMigrations()) {
      io.stdout.write(m.executedAt ? `applied  ${m.name}  ${m.executedAt.toISOString()}\n` : `pending  ${m.name}\n`);
    }
  },
};
