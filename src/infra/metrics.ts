import type { Pool } from 'pg';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { AUDIT_EVENT_TYPES, type AuditEventType } from '../audit/audit-events.js';
import { clusterMetricsFor } from './cluster-metrics.js';

/** What the gauges read when they are scraped. */
export interface MetricSources {
  /** The pg pool, on PostgreSQL; the embedded database has none. */
  pool?: Pick<Pool, 'totalCount' | 'idleCount' | 'waitingCount'>;
  /** Mail not yet sent nor given up. */
  outboxBacklog(): Promise<number>;
  /** Password hashes waiting for a slot. */
  hashesWaiting(): number;
}

export interface MetricsOptions {
  /** This process is a node:cluster worker: a scrape answers for every worker, merged by the primary. */
  clusterWorker?: boolean;
}

/** The operation label of requests that matched no operation of the contract (unknown routes, docs). */
export const NO_OPERATION = 'none';

/** A scrape must answer even when the database does not; a gauge it could not read shows NaN. */
const SCRAPE_QUERY_TIMEOUT_MS = 1000;

/**
 * One registry per app, made here and only here: tests run many apps in one process, where the
 * global default registry would clash. Worker processes under node:cluster each keep theirs, and the
 * primary merges them (cluster-metrics.ts).
 */
function createRegistry(): Registry {
  return new Registry();
}

/** The service's Prometheus metrics. */
export class Metrics {
  private readonly registry = createRegistry();
  private defaultsStarted = false;
  private readonly requestSeconds: Histogram<'operation_id' | 'method' | 'status'>;
  private readonly authEvents: Counter<'event_type'>;
  private readonly passwordHashSeconds: Histogram;
  private readonly pwnedUnavailable: Counter;
  private readonly rateLimitFallbacks: Counter;
  private readonly merged?: () => Promise<string>;

  constructor(sources: MetricSources, options: MetricsOptions = {}) {
    const registers = [this.registry];
    this.requestSeconds = new Histogram({
      name: 'http_request_duration_seconds',
      help: `Time to answer a request, by the contract's operationId ("${NO_OPERATION}" for any other path), method and status.`,
      labelNames: ['operation_id', 'method', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.authEvents = new Counter({
      name: 'auth_events_total',
      help: 'Authentication and administration events, as the audit trail records them, counted once committed.',
      labelNames: ['event_type'],
      registers,
    });
    // Every type reads 0 from the start, so that rate() and alerts see a series before the first event.
    for (const type of AUDIT_EVENT_TYPES) this.authEvents.inc({ event_type: type }, 0);
    this.passwordHashSeconds = new Histogram({
      name: 'password_hash_duration_seconds',
      help: 'Time one password hash or check took (bcrypt, argon2 or PBKDF2), queueing aside.',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1, 2, 5],
      registers,
    });
    this.pwnedUnavailable = new Counter({
      name: 'pwned_passwords_unavailable_total',
      help: 'New passwords let through unchecked because the Pwned Passwords range API failed or did not answer in time.',
      registers,
    });
    this.rateLimitFallbacks = new Counter({
      name: 'rate_limit_store_fallbacks_total',
      help: "Rate-limit and failed sign-in counter operations answered from this process's memory because the shared PostgreSQL store failed.",
      registers,
    });
    new Gauge({
      name: 'password_hash_waiting',
      help: 'Password hashes waiting for a free slot.',
      registers,
      collect() {
        this.set(sources.hashesWaiting());
      },
    });
    new Gauge({
      name: 'mail_outbox_pending',
      help: 'Messages in the mail outbox not yet sent nor given up.',
      registers,
      // Every worker counts the same table: merged, the count is theirs, not their sum.
      aggregator: 'max',
      async collect() {
        this.set(await withTimeout(sources.outboxBacklog(), SCRAPE_QUERY_TIMEOUT_MS).catch(() => Number.NaN));
      },
    });
    const pool = sources.pool;
    if (pool) {
      const gauges: Array<[string, string, () => number]> = [
        ['db_pool_connections', 'Connections the PostgreSQL pool holds, idle or in use.', () => pool.totalCount],
        ['db_pool_idle_connections', 'Connections of the pool not in use.', () => pool.idleCount],
        ['db_pool_waiting_requests', 'Queries waiting for a connection of the pool.', () => pool.waitingCount],
      ];
      for (const [name, help, read] of gauges) {
        new Gauge({
          name,
          help,
          registers,
          collect() {
            this.set(read());
          },
        });
      }
    }
    if (options.clusterWorker) {
      this.merged = clusterMetricsFor(this.registry);
      // The primary may gather from this worker before anyone scrapes it: its process metrics start now.
      this.startDefaults();
    }
  }

  observeRequest(operationId: string | undefined, method: string, status: number, seconds: number): void {
    this.requestSeconds.observe({ operation_id: operationId ?? NO_OPERATION, method, status: String(status) }, seconds);
  }

  countEvent(type: AuditEventType): void {
    this.authEvents.inc({ event_type: type });
  }

  observePasswordHash(seconds: number): void {
    this.passwordHashSeconds.observe(seconds);
  }

  countPwnedPasswordsUnavailable(): void {
    this.pwnedUnavailable.inc();
  }

  countRateLimitStoreFallback(): void {
    this.rateLimitFallbacks.inc();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** Every metric in the Prometheus text format; a cluster worker's are every worker's, merged. */
  async render(): Promise<string> {
    if (this.merged) return this.merged();
    this.startDefaults();
    return this.registry.metrics();
  }

  /**
   * The process metrics start with the first scrape: their event-loop monitor and GC observer run for
   * the rest of the process once started, which an app nobody scrapes should not pay for.
   */
  private startDefaults(): void {
    if (this.defaultsStarted) return;
    collectDefaultMetrics({ register: this.registry });
    this.defaultsStarted = true;
  }
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
