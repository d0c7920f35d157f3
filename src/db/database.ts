import { mkdirSync } from 'node:fs';
import { Kysely, PostgresDialect } from 'kysely';
import { PGlite } from '@electric-sql/pglite';
import { PGliteDialect } from 'kysely-pglite-dialect';
import { Pool } from 'pg';
import type { Database } from './types';

export interface DatabaseOptions {
  /** A postgres:// URL, or undefined for the embedded database. */
  url: string | undefined;
  /** Folder of the embedded database, or `memory://` for one that lives only in this process. */
  dataDir: string;
}

export interface DatabaseHandle {
  db: Kysely<Database>;
  kind: 'postgres' | 'embedded';
}

/** Opens Kysely over pg when a URL is given, otherwise over an embedded PGlite. */
export async function openDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  if (options.url) {
    const pool = new Pool({
      connectionString: options.url,
      max: 10,
      // Fail fast instead of queueing forever when the server is gone.
      connectionTimeoutMillis: 2000,
      idleTimeoutMillis: 30_000,
    });
    // An idle client losing its connection must not crash the process; the next query reconnects.
    pool.on('error', () => {});
    return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), kind: 'postgres' };
  }
  const inMemory = options.dataDir.startsWith('memory://');
  if (!inMemory) mkdirSync(options.dataDir, { recursive: true });
  const pglite = await PGlite.create(inMemory ? undefined : options.dataDir);
  return { db: new Kysely<Database>({ dialect: new PGliteDialect(pglite) }), kind: 'embedded' };
}
