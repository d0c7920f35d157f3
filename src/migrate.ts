import 'dotenv/config';
import { loadConfig } from './config';
import { openDatabase } from './db/database';
import { migrateToLatest } from './db/migrate';

/** `npm run migrate`: applies every pending migration to the configured database. */
async function main(): Promise<void> {
  const config = loadConfig();
  const { db, kind } = await openDatabase(config);
  try {
    const { results = [] } = await migrateToLatest(db);
    for (const r of results) process.stdout.write(`${r.status.padEnd(8)} ${r.migrationName}\n`);
    process.stdout.write(results.length ? `migrated the ${kind} database\n` : `the ${kind} database is up to date\n`);
  } finally {
    await db.destroy();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`Migration failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
