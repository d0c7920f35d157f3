import cluster from 'node:cluster';
import type { Kysely } from 'kysely';
import type { Config } from '../config/index.js';
import type { DatabaseHandle } from '../db/database.js';
import { openMigratedDatabase } from '../db/migrate.js';
import { transactions, type Transact } from '../db/transaction.js';
import type { Database } from '../db/types.js';
import type { AuditEventType } from '../audit/audit-events.js';
import { Housekeeping } from '../infra/housekeeping.js';
import { Metrics } from '../infra/metrics.js';
import { Outbox } from '../infra/outbox.js';
import { limiterFactory, StoreOutages, type LimiterFactory } from '../infra/rate-limiter.js';
import { rateLimitGuard, type RateLimits } from '../http/rate-limit.js';
import { createLogger, type Logger } from '../logger.js';
import { AccountMail } from '../mail/account-mail.js';
import { createTransport } from '../mail/transport.js';
import type { Clock } from '../mfa/factors.js';
import { CurrentPassword } from '../passwords/current-password.js';
import { PasswordHasher } from '../passwords/passwords.js';
import { LoginGuard } from '../sessions/login-guard.js';
import { TokenService } from '../sessions/tokens.js';
import { WebhookDispatcher } from '../webhooks/delivery.js';
import { BackchannelLogoutDispatcher } from '../oidc/backchannel-logout.js';
import { OauthClientCache } from '../oidc/client-cache.js';

export interface CoreOptions {
  logger?: Logger;
  /** The clock TOTP codes and second-factor challenges are read against; tests move it. */
  clock?: Clock;
}

/**
 * What every capability may need, made once per app: the database and its units of work, the
 * outbox and account mail, token signing, password hashing, the rate limits and the login lockout,
 * metrics, and the background work (outbox, housekeeping, webhook delivery) that `start` begins.
 */
export interface Core {
  config: Config;
  logger: Logger;
  db: Kysely<Database>;
  kind: DatabaseHandle['kind'];
  pool: DatabaseHandle['pool'];
  transact: Transact;
  outbox: Outbox;
  mail: AccountMail;
  tokens: TokenService;
  passwords: PasswordHasher;
  /** Absent when rate limiting is off. */
  limiter: LimiterFactory | undefined;
  /** The per-address limits of requests, each counted as its operation; absent when rate limiting is off. */
  limits: RateLimits | undefined;
  loginGuard: LoginGuard | undefined;
  /** A user's current password, asked for before they change their own credentials; counts like a login. */
  currentPassword: CurrentPassword;
  metrics: Metrics | undefined;
  housekeeping: Housekeeping;
  webhooks: WebhookDispatcher;
  /** Delivery of logout tokens to clients (back-channel logout), once the provider signs them. */
  backchannelLogouts: BackchannelLogoutDispatcher;
  /** The OAuth clients as this process keeps them in memory, current on every process. */
  clientCache: OauthClientCache;
  now: Clock;
  /** Readiness turns 503 and responses ask clients to close their connections once `draining`. */
  lifecycle: { draining: boolean };
  start(): void;
  stop(): Promise<void>;
}

/** Opens the (migrated) database and makes the shared machinery around it. */
export async function openCore(config: Config, options: CoreOptions = {}): Promise<Core> {
  const logger = options.logger ?? createLogger(config.logging);
  const { db, kind, pool } = await openMigratedDatabase(config.database);
  try {
    const outbox = new Outbox(db, config.mail, config.secret.key, createTransport(config.mail, logger), logger);
    const housekeeping = new Housekeeping(db, config.housekeeping, config.audit, logger);
    const webhooks = new WebhookDispatcher(db, config.webhooks, config.secret.key, logger);
    const backchannelLogouts = new BackchannelLogoutDispatcher(db, config.webhooks, config.providers.allowPrivateUrls, logger);
    const clientCache = new OauthClientCache(db, pool && config.database.url ? { url: config.database.url, logger } : undefined);
    const metrics = config.metrics.enabled
      ? new Metrics(
          { pool, outboxBacklog: () => outbox.backlog(), hashesWaiting: (): number => passwords.queued },
          { clusterWorker: cluster.isWorker },
        )
      : undefined;
    // Rate limits and the login lockout; counters in memory or, shared, in this database.
    const limiter = config.limits.rateLimitEnabled
      ? limiterFactory(
          config.limits,
          pool && {
            pool,
            preparedStatements: config.database.preparedStatements,
            outages: new StoreOutages(logger, metrics && (() => metrics.countRateLimitStoreFallback())),
          },
        )
      : undefined;
    // Every write goes through one unit of work; metrics count the audit events of those that commit,
    // and the webhook messages they wrote are sent at once.
    const transact = transactions(db, {
      onCommitted: metrics && ((types) => types.forEach((type) => metrics.countEvent(type as AuditEventType))),
      onWebhooksQueued: () => webhooks.wake(),
      onLogoutsQueued: () => backchannelLogouts.wake(),
    });
    const passwords = new PasswordHasher({
      policy: config.passwords,
      concurrency: config.passwords.hashConcurrency,
      maxWaiting: config.passwords.hashQueueMax,
      maxPerCaller: config.passwords.hashCallerMax,
      observe: metrics && ((seconds) => metrics.observePasswordHash(seconds)),
    });
    const loginGuard = limiter && (await LoginGuard.create(config.limits, config.secret.key, limiter));
    return {
      config,
      logger,
      db,
      kind,
      pool,
      transact,
      outbox,
      mail: new AccountMail(config.account, outbox),
      tokens: new TokenService(config.tokens, config.secret.key),
      passwords,
      limiter,
      limits: limiter && (await rateLimitGuard(config.limits, limiter)),
      loginGuard,
      currentPassword: new CurrentPassword(passwords, transact, loginGuard),
      metrics,
      housekeeping,
      webhooks,
      backchannelLogouts,
      clientCache,
      now: options.clock ?? Date.now,
      lifecycle: { draining: false },
      start() {
        outbox.start();
        housekeeping.start();
        webhooks.start();
        backchannelLogouts.start();
        void clientCache.start();
      },
      async stop() {
        await housekeeping.stop();
        await outbox.stop();
        await webhooks.stop();
        await backchannelLogouts.stop();
        await clientCache.stop();
        await db.destroy();
      },
    };
  } catch (error) {
    await db.destroy();
    throw error;
  }
}
