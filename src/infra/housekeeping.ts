import type { Kysely } from 'kysely';
import type { AuditConfig, HousekeepingConfig } from '../config/index.js';
import { purgeBatch, PURGE_TARGETS, tryHousekeepingLock, type PurgeTarget } from '../db/housekeeping.js';
import { transactions, type Transact } from '../db/transaction.js';
import type { Database } from '../db/types.js';
import type { Logger } from '../logger.js';

/**
 * Rows deleted per table; `audit_events` only while AUDIT_RETENTION_DAYS is set; `oidc_records`
 * (the OpenID Connect provider's expired sessions, grants, codes and tokens), `provider_flows` and
 * `provider_codes` (upstream sign-ins under way and their one-time codes) and `organization_invitations`
 * (expired ones) only when it removed some.
 */
export type PurgeCounts = Partial<Record<PurgeTarget, number>>;

export interface PurgeResult {
  removed: PurgeCounts;
  /**
   * `done`: nothing is left to purge. `busy`: another process holds the lock and is purging, so
   * this one left the rest to it. `stopped`: the worker was stopped part way.
   */
  status: 'done' | 'busy' | 'stopped';
}

/** Tables counted in a pass's result only when rows were removed from them. */
const ONLY_WHEN_REMOVED: ReadonlySet<PurgeTarget> = new Set([
  'oidc_records',
  'provider_flows',
  'provider_codes',
  'organization_invitations',
]);

/** The first pass comes this long after start-up at most, so that short-lived processes purge too. */
const FIRST_PASS_MAX_DELAY_MS = 60_000;

/**
 * Purges what the service no longer needs (see PURGE_RULES) on a schedule. Each batch is its own
 * short transaction that first takes an advisory lock without waiting, so that with several
 * processes on one database only one deletes at a time, and the others skip their turn; between
 * batches, requests get the database (the embedded one has a single connection).
 */
export class Housekeeping {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopping = false;
  private readonly transact: Transact;

  constructor(
    db: Kysely<Database>,
    private readonly config: HousekeepingConfig,
    private readonly audit: AuditConfig,
    private readonly logger: Logger,
  ) {
    this.transact = transactions(db);
  }

  /** Schedules the passes; does nothing when HOUSEKEEPING_INTERVAL_SECONDS is 0. */
  start(): void {
    const intervalMs = this.config.intervalSeconds * 1000;
    if (intervalMs === 0 || this.timer || this.running) return;
    this.stopping = false;
    this.schedule(Math.min(intervalMs, FIRST_PASS_MAX_DELAY_MS));
  }

  /** Cancels the next pass and waits for the one under way, which stops after its current batch. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One pass over every table, batch by batch, until nothing is due (or another process is at it). */
  async purge(): Promise<PurgeResult> {
    const rules = this.rules();
    const removed: PurgeCounts = Object.fromEntries(
      rules.filter(([target]) => !ONLY_WHEN_REMOVED.has(target)).map(([target]) => [target, 0]),
    );
    const { batchSize } = this.config;
    for (const [target, retentionHours] of rules) {
      for (;;) {
        if (this.stopping) return { removed, status: 'stopped' };
        const deleted = await this.transact(async (trx) =>
          (await tryHousekeepingLock(trx)) ? purgeBatch(trx, target, retentionHours, batchSize) : undefined,
        );
        if (deleted === undefined) return { removed, status: 'busy' };
        if (deleted > 0 || !ONLY_WHEN_REMOVED.has(target)) removed[target] = (removed[target] ?? 0) + deleted;
        if (deleted < batchSize) break;
      }
    }
    return { removed, status: 'done' };
  }

  /** Each table to purge with its retention in hours: the audit trail's is its own, and it has none unless set. */
  private rules(): Array<[PurgeTarget, number]> {
    const hours = this.config.retentionHours;
    const auditDays = this.audit.retentionDays;
    return PURGE_TARGETS.flatMap((target): Array<[PurgeTarget, number]> => {
      if (target !== 'audit_events') return [[target, hours]];
      return auditDays === undefined ? [] : [[target, auditDays * 24]];
    });
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.pass().finally(() => {
        this.running = undefined;
        if (!this.stopping) this.schedule(this.config.intervalSeconds * 1000);
      });
    }, delayMs);
    this.timer.unref();
  }

  private async pass(): Promise<void> {
    try {
      const { removed, status } = await this.purge();
      const total = Object.values(removed).reduce((sum, count) => sum + (count ?? 0), 0);
      if (total > 0) this.logger.info({ removed, status }, `housekeeping: purged ${total} rows`);
      else if (status === 'busy') this.logger.debug('housekeeping: another process is purging');
    } catch (error) {
      // The next pass tries again; a database that is down is reported by the readiness probe.
      this.logger.warn({ err: error }, 'housekeeping: purge failed');
    }
  }
}
