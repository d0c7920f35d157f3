import cluster from 'node:cluster';
import type { Pool, QueryConfig } from 'pg';
import { RateLimiterCluster, RateLimiterMemory, RateLimiterPostgres, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { LimitsConfig } from '../config/index.js';
import type { Logger } from '../logger.js';

/** The table that holds the counters when they live in PostgreSQL (made by a migration). */
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

/** The shared store's pool, and what to do when it fails. */
export interface SharedStore {
  pool: Pool;
  /** False for a pooler that cannot keep named statements (DATABASE_PREPARED_STATEMENTS=false). */
  preparedStatements: boolean;
  outages: StoreOutages;
}

/**
 * Counters in memory (in a cluster, the primary's memory, shared over IPC), or in PostgreSQL through
 * the service's own pool so that several processes share them. A store that fails falls back to
 * counting in this process's memory rather than refusing requests, which `outages` hears of.
 */
export function limiterFactory(config: Pick<LimitsConfig, 'store'>, store: SharedStore | undefined): LimiterFactory {
  if (config.store !== 'postgres') {
    // A cluster worker keeps no counters of its own: the primary holds them for every worker.
    if (cluster.isWorker) return async (options) => new RateLimiterCluster({ ...options, timeoutMs: 2000 });
    return async (options) => new RateLimiterMemory(options);
  }
  if (!store) throw new Error('RATE_LIMIT_STORE=postgres needs a PostgreSQL database');
  const storeClient = observedClient(store);
  let sweeper = true;
  return async (options) => {
    // One limiter per process sweeps expired rows (all of them, whatever their prefix); the others only count.
    const clearExpiredByTimeout = sweeper;
    sweeper = false;
    return new RateLimiterPostgres({
      ...options,
      storeClient,
      storeType: 'pool',
      tableName: RATE_LIMIT_TABLE,
      tableCreated: true,
      clearExpiredByTimeout,
      insuranceLimiter: new RateLimiterMemory(options),
    });
  };
}

/** The sweep of expired rows: a failure of it is not a count taken in memory. */
const SWEEP_STATEMENT = 'rlflx-clear-expired';

/**
 * The pool as the limiter queries it, telling `outages` which queries failed (each one's operation is
 * then answered by the limiter's memory) and which answered.
 */
function observedClient({ pool, preparedStatements, outages }: SharedStore): { query(query: QueryConfig): Promise<unknown> } {
  return {
    query: async (query) => {
      const sweep = query.name?.endsWith(SWEEP_STATEMENT) ?? false;
      const sent = outages.sending();
      try {
        const result = await pool.query(preparedStatements ? query : { text: query.text, values: query.values });
        if (!sweep) outages.answered(sent);
        return result;
      } catch (error) {
        if (!sweep) outages.failed(error);
        throw error;
      }
    },
  };
}

/**
 * Says once per outage of the shared store that this process counts in its own memory, and once
 * that the store answers again; `counted` hears of every operation answered from memory meanwhile.
 */
export class StoreOutages {
  private sent = 0;
  /** The last query sent when the outage began; undefined while the store answers. */
  private downSince: number | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly counted?: () => void,
  ) {}

  /** Numbers a query as it is sent, for `answered`. */
  sending(): number {
    return ++this.sent;
  }

  failed(error: unknown): void {
    this.counted?.();
    if (this.downSince !== undefined) return;
    this.downSince = this.sent;
    this.logger.error(
      { err: error },
      "rate-limit store failed: counting rate limits and failed sign-ins in this process's memory until it answers again",
    );
  }

  /** A query sent before the outage began says nothing about whether it is over. */
  answered(sent: number): void {
    if (this.downSince === undefined || sent <= this.downSince) return;
    this.downSince = undefined;
    this.logger.info('rate-limit store answers again: counters are shared again');
  }
}
