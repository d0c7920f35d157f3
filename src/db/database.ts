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
  /** The pg pool under `db` (PostgreSQL only), for other clients of the same database. */
  pool?: Pool;
}

/** Opens Kysely over pg when a URL is given, otherwise over an embedded PGlite. */
export async function openDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  if (options.url) {
    const pool = new Pool({
      connectionString: options.url,
      max: 10,
      // Fail fast instead of queueing forever when the server is gone.
      connectionTimeoutMillis: 2000,
      // A server that stops answering fails the query rather than holding the request open.
      query_timeout: 10_000,
      idleTimeoutMillis: 30_000,
    });
    // An idle client losing its connection must not crash the process; the next query reconnects.
    pool.on('error', () => {});
    // A client in use losing its connection fails its query (and the pool drops it on release); without a
    // listener of its own it would also emit an unhandled 'error' event that takes the process down.
    pool.on('connect', (client) => client.on('error', () => {}));
    return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), kind: 'postgres', pool };
  }
  const inMemory = options.dataDir.startsWith('memory://');
  if (!inMemory) mkdirSync(options.dataDir, { recursive: true });
  const pglite = await PGlite.create(inMemory ? undefined : options.dataDir);
  return { db: new Kysely<Database>({ dialect: new PGliteDialect(pglite) }), kind: 'embedded' };
}
