import { Migrator, sql, type Kysely, type MigrationResult, type MigrationResultSet } from 'kysely';
import { migrations } from '../../migrations/index.js';
import type { DatabaseConfig } from '../config/index.js';
import { openDatabase, type DatabaseHandle, type OpenOptions } from './database.js';

/**
 * Opens the configured database and applies every pending migration: the one way migrations start,
 * for the server, `npm run migrate` and the commands alike. `applied` lists what this call ran.
 */
export async function openMigratedDatabase(
  config: DatabaseConfig,
  options: OpenOptions = {},
): Promise<DatabaseHandle & { applied: MigrationResult[] }> {
  const handle = await openDatabase(config, options);
  try {
    const { results = [] } = await migrateToLatest(handle.db);
    return { ...handle, applied: results };
  } catch (error) {
    await handle.db.destroy();
    throw error;
  }
}

export function migrator(db: Kysely<any>): Migrator {
  return new Migrator({ db, provider: { getMigrations: async () => migrations } });
}

/** Runs every pending migration; throws with the failing migration's name and cause. */
async function migrateToLatest(db: Kysely<any>): Promise<MigrationResultSet> {
  if (await upToDate(db)) return { results: [] };
  return checked(await migrator(db).migrateToLatest());
}

/** The Migrator's result, or an error naming the migration that failed, with its cause. */
export function checked(result: MigrationResultSet): MigrationResultSet {
  if (!result.error) return result;
  const failed = result.results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
  throw new Error(`Migration ${failed} failed`, { cause: result.error });
}

/**
 * True when the database records exactly the migrations this code knows, so there is nothing to do:
 * one query, where the Migrator inspects the catalog twice and takes its lock before finding out (a
 * tenth of an embedded start). Anything else (no table yet, a migration pending or unknown, an error)
 * leaves the answer to the Migrator.
 */
async function upToDate(db: Kysely<any>): Promise<boolean> {
  try {
    const { rows } = await sql<{ name: string }>`select name from kysely_migration`.execute(db);
    const known = new Set(Object.keys(migrations));
    return rows.length === known.size && rows.every((row) => known.has(row.name));
  } catch {
    return false;
  }
}
