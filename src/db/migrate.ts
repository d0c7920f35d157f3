import { Migrator, type Kysely, type MigrationResultSet } from 'kysely';
import { migrations } from '../../migrations';

export function migrator(db: Kysely<any>): Migrator {
  return new Migrator({ db, provider: { getMigrations: async () => migrations } });
}

/** Runs every pending migration; throws with the failing migration's name and cause. */
export async function migrateToLatest(db: Kysely<any>): Promise<MigrationResultSet> {
  const result = await migrator(db).migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`Migration ${failed} failed`, { cause: result.error });
  }
  return result;
}
