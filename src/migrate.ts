import { ConfigError, loadProcessConfig } from './config/index.js';
import { DatabaseConnectionError } from './db/connection-check.js';
import { DataDirRefused } from './db/data-dir.js';
import { DataDirInUse } from './db/data-dir-lock.js';
import { openMigratedDatabase } from './db/migrate.js';

/** `npm run migrate`: applies every pending migration to the configured database. */
async function main(): Promise<void> {
  const { database } = loadProcessConfig();
  const { db, kind, applied } = await openMigratedDatabase(database, { waitForDataDirMs: database.dataDirWaitSeconds * 1000 });
  try {
    for (const r of applied) process.stdout.write(`${r.status.padEnd(8)} ${r.migrationName}\n`);
    process.stdout.write(applied.length ? `migrated the ${kind} database\n` : `the ${kind} database is up to date\n`);
  } finally {
    await db.destroy();
  }
}

main().catch((error: unknown) => {
  if (
    error instanceof ConfigError ||
    error instanceof DatabaseConnectionError ||
    error instanceof DataDirInUse ||
    error instanceof DataDirRefused
  ) {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
  process.stderr.write(`Migration failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
