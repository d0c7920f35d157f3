import { createRequire } from 'node:module';
import { Kysely, PostgresDialect } from 'kysely';
import { PGlite } from '@electric-sql/pglite';
// Trigram indexes for the user search.
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { PGliteDialect } from 'kysely-pglite-dialect';
import type { Pool } from 'pg';
import { checkConnection } from './connection-check.js';
import { prepareDataDir, unreadableDataDir } from './data-dir.js';
import { lockDataDir } from './data-dir-lock.js';
import { preparingPool } from './prepared.js';
import type { DatabaseConfig } from '../config/index.js';
import type { Database } from './types.js';

const require = createRequire(import.meta.url);

export interface DatabaseHandle {
  db: Kysely<Database>;
  kind: 'postgres' | 'embedded';
  /** The pg pool under `db` (PostgreSQL only), for other clients of the same database. */
  pool?: Pool;
}

export interface OpenOptions {
  /** How long to wait for another process to release an embedded DATA_DIR; by default it is refused at once. */
  waitForDataDirMs?: number;
  /** Told, once, that another process holds DATA_DIR and the wait has begun. */
  onDataDirWait?: (pid: number) => void;
}

/**
 * Opens Kysely over pg when `url` is set, otherwise over an embedded PGlite in `dataDir` (or in
 * this process only, for `memory://`). On PostgreSQL the registered statements (`preparedStatement`) go
 * by name unless `preparedStatements` is off.
 */
export async function openDatabase(config: DatabaseConfig, options: OpenOptions = {}): Promise<DatabaseHandle> {
  if (config.url) {
    // Loaded only here: the embedded database does not need pg, and a start spends most of its time loading modules.
    const { Pool } = require('pg') as typeof import('pg');
    const connectionTimeoutMillis = 2000;
    const pool = new Pool({
      connectionString: config.url,
      max: 10,
      // Fail fast instead of queueing forever when the server is gone.
      connectionTimeoutMillis,
      // A server that stops answering fails the query rather than holding the request open.
      query_timeout: 10_000,
      idleTimeoutMillis: 30_000,
    });
    // An idle client losing its connection must not crash the process; the next query reconnects.
    pool.on('error', () => {});
    // A client in use losing its connection fails its query (and the pool drops it on release); without a
    // listener of its own it would also emit an unhandled 'error' event that takes the process down.
    pool.on('connect', (client) => client.on('error', () => {}));
    await checkConnection(pool, config.url, connectionTimeoutMillis).catch(async (error: unknown) => {
      await pool.end();
      throw error;
    });
    return {
      db: new Kysely<Database>({ dialect: new PostgresDialect({ pool: config.preparedStatements ? preparingPool(pool) : pool }) }),
      kind: 'postgres',
      pool,
    };
  }
  const inMemory = config.dataDir.startsWith('memory://');
  if (inMemory) {
    const pglite = await PGlite.create({ extensions: { pg_trgm } });
    return { db: new Kysely<Database>({ dialect: new PGliteDialect(pglite) }), kind: 'embedded' };
  }
  prepareDataDir(config.dataDir);
  // PGlite keeps the database in this process's memory and writes it back to the folder: a second
  // process on the folder would see only its own writes, so it waits or is refused.
  const unlock = await lockDataDir(config.dataDir, options.waitForDataDirMs, options.onDataDirWait);
  try {
    const pglite = await PGlite.create({ dataDir: config.dataDir, extensions: { pg_trgm } }).catch((error: unknown) => {
      throw unreadableDataDir(config.dataDir, error);
    });
    // Kysely's destroy closes PGlite; the folder is free once it has.
    const close = pglite.close.bind(pglite);
    pglite.close = async () => {
      try {
        await close();
      } finally {
        unlock();
      }
    };
    return { db: new Kysely<Database>({ dialect: new PGliteDialect(pglite) }), kind: 'embedded' };
  } catch (error) {
    unlock();
    throw error;
  }
}
