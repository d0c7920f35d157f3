import cluster from 'node:cluster';
import type { Pool } from 'pg';
import { RateLimiterCluster, RateLimiterMemory, RateLimiterPostgres, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { LimitsConfig } from '../config';

/** The table that holds the counters when they live in PostgreSQL (created on first use). */
export const RATE_LIMIT_TABLE = 'rate_limits';

export interface LimiterOptions {
  /** Separates one limiter's keys from another's in the shared store. */
  keyPrefix: string;
  /** How many points a key may consume per window. */
  points: number;
  /** The window, in seconds. */
  duration: number;
}

/** Makes counters in the configured store: this process's memory, or the service's database. */
export type LimiterFactory = (options: LimiterOptions) => Promise<RateLimiterAbstract>;

/**
 * Counters in memory (in a cluster, the primary's memory, shared over IPC), or in PostgreSQL through
 * the service's own pool so that several processes share them. A store that fails falls back to
 * counting in memory rather than refusing requests.
 */
export function limiterFactory(config: Pick<LimitsConfig, 'store'>, pool: Pool | undefined): LimiterFactory {
  if (config.store !== 'postgres') {
    // A cluster worker keeps no counters of its own: the primary holds them for every worker.
    if (cluster.isWorker) return async (options) => new RateLimiterCluster({ ...options, timeoutMs: 2000 });
    return async (options) => new RateLimiterMemory(options);
  }
  if (!pool) throw new Error('RATE_LIMIT_STORE=postgres needs a PostgreSQL database');
  let table: Promise<unknown> | undefined;
  return async (options) => {
    const common = {
      ...options,
      storeClient: pool,
      storeType: 'pool',
      tableName: RATE_LIMIT_TABLE,
      insuranceLimiter: new RateLimiterMemory(options),
    };
    if (!table) {
      // The first limiter creates the table (and sweeps expired rows); the others reuse it.
      let first: RateLimiterPostgres | undefined;
      table = new Promise<void>((resolve, reject) => {
        first = new RateLimiterPostgres(common, (error?: Error) => (error ? reject(error) : resolve()));
      });
      await table;
      return first!;
    }
    await table;
    return new RateLimiterPostgres({ ...common, tableCreated: true, clearExpiredByTimeout: false });
  };
}
