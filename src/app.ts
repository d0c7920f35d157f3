import cluster from 'node:cluster';
import Koa from 'koa';
import { hashPolicyOf, type Config } from './config';
import { openDatabase } from './db/database';
import { migrateToLatest } from './db/migrate';
import { handlers } from './handlers';
import type { Services } from './handlers/types';
import { buildApi } from './http/api';
import { contractFor, validationContractFor } from './http/contract';
import { docsRouter } from './http/docs';
import { ApiError, notFound } from './http/errors';
import { METRICS_PATH, metricsEndpoint, requestMetrics } from './http/metrics';
import { accessLog, bodies, errors, requestId } from './http/middleware';
import { corsFor, noStoreUnder, securityHeaders } from './http/security';
import { rateLimitGuard } from './http/rate-limit';
import { createLogger, type Logger } from './logger';
import { AccountService } from './services/account';
import { AccountMail } from './services/account-mail';
import { AuditTrail } from './services/audit';
import { AuthService } from './services/auth';
import { BreachedPasswords } from './services/breached-passwords';
import { CurrentPassword } from './services/current-password';
import { Housekeeping } from './services/housekeeping';
import { LoginGuard } from './services/login-guard';
import { Metrics } from './services/metrics';
import { createTransport, Outbox } from './services/outbox';
import { PwnedPasswordsRange } from './infra/pwned-passwords';
import { PasswordHasher } from './services/passwords';
import { limiterFactory } from './services/rate-limiter';
import { TokenService } from './services/tokens';
import { UserImport } from './services/user-import';
import { UserService } from './services/users';

export interface App {
  koa: Koa;
  services: Services;
  logger: Logger;
  /** Readiness turns 503 and responses ask clients to close their connections; requests are still served. */
  beginShutdown(): void;
  close(): Promise<void>;
}

export interface AppOptions {
  logger?: Logger;
}

/** Wires the service: database (migrated), services, contract-driven routes and docs. */
export async function createApp(config: Config, options: AppOptions = {}): Promise<App> {
  const logger = options.logger ?? createLogger(config);
  const { db, kind, pool } = await openDatabase(config);
  try {
    await migrateToLatest(db);
    // Rate limits and the login lockout; counters in memory or, shared, in this database.
    const limiter = config.rateLimitEnabled ? limiterFactory(config, pool) : undefined;
    const tokens = new TokenService(config);
    const outbox = new Outbox(db, config, createTransport(config, logger), logger);
    const mail = new AccountMail(config, outbox);
    const housekeeping = new Housekeeping(db, config, logger);
    const metrics = config.metricsEnabled
      ? new Metrics(
          { pool, outboxBacklog: () => outbox.backlog(), hashesWaiting: (): number => passwords.queued },
          { clusterWorker: cluster.isWorker },
        )
      : undefined;
    const audit = new AuditTrail(db, config, logger);
    if (metrics) audit.onRecorded((type) => metrics.countEvent(type));
    const passwords = new PasswordHasher({
      policy: hashPolicyOf(config),
      concurrency: config.passwordHashConcurrency,
      maxWaiting: config.passwordHashQueueMax,
      maxPerCaller: config.passwordHashCallerMax,
      observe: metrics && ((seconds) => metrics.observePasswordHash(seconds)),
    });
    const lifecycle = { draining: false };
    const loginGuard = limiter && (await LoginGuard.create(config, limiter));
    // A user's current password, asked for before they change their own credentials, counts like a login.
    const currentPassword = new CurrentPassword(passwords, audit, loginGuard);
    const breached = config.pwnedPasswordsCheck
      ? new BreachedPasswords(
          new PwnedPasswordsRange({ url: config.pwnedPasswordsUrl, timeoutMs: config.pwnedPasswordsTimeoutMs }),
          logger,
          metrics && (() => metrics.countPwnedPasswordsUnavailable()),
        )
      : undefined;
    const services: Services = {
      config,
      db,
      auth: new AuthService(db, config, tokens, mail, passwords, audit, loginGuard, breached),
      account: new AccountService(db, config, mail, passwords, audit, logger, currentPassword, loginGuard, breached),
      users: new UserService(db, config, mail, passwords, audit, currentPassword, breached),
      imports: new UserImport(audit),
      audit,
      startedAt: Date.now(),
      lifecycle,
    };
    if (config.adminEmail && config.adminPassword) {
      const admin = await services.users.ensureAdmin(config.adminEmail, config.adminPassword);
      if (admin) logger.info({ userId: admin.id }, 'created the admin account from ADMIN_EMAIL');
    }

    const document = contractFor(config);
    const limits = limiter && (await rateLimitGuard(config, limiter));
    // The import route alone takes bodies up to IMPORT_MAX_BODY_BYTES, so that 1,000 rows fit.
    const [regularBodies, importBodies] = [bodies(config.maxBodyBytes), bodies(config.importMaxBodyBytes)];
    const { router, compileValidators } = await buildApi(validationContractFor(config), handlers, services, {
      guard: limits?.guard,
      bodyGuard: limits?.bodyGuard,
      parseBody: (ctx, next) => (ctx.state.operationId === 'importUsers' ? importBodies : regularBodies)(ctx, next),
    });
    // Behind a proxy, the client is the address that proxy appended last to X-Forwarded-For; earlier
    // entries come from the client and could be anything.
    const koa = new Koa({ proxy: config.trustProxy, maxIpsCount: 1 });
    koa.silent = true;
    koa.use(securityHeaders());
    koa.use(noStoreUnder('/api'));
    koa.use(requestId);
    koa.use(async (ctx, next) => {
      // A stopping process lets keep-alive clients know to reconnect (to another process) after this response.
      if (lifecycle.draining) ctx.set('Connection', 'close');
      await next();
    });
    koa.use(accessLog(logger, { quietPaths: [METRICS_PATH] }));
    if (metrics) koa.use(requestMetrics(metrics));
    if (config.corsOrigins.length > 0) koa.use(corsFor(config.corsOrigins));
    koa.use(errors(logger));
    if (metrics) koa.use(metricsEndpoint(metrics, config.metricsToken));
    if (config.docsEnabled) koa.use(docsRouter(document).routes());
    koa.use(router.routes());
    koa.use(async (ctx) => {
      const layers = router.match(ctx.path, ctx.method).path;
      if (layers.length === 0) throw notFound(`No route for ${ctx.method} ${ctx.path}`);
      const allow = [...new Set(layers.flatMap((layer) => layer.methods))].join(', ');
      if (ctx.method === 'OPTIONS') {
        ctx.set('Allow', allow);
        ctx.status = 204;
        return;
      }
      throw new ApiError(405, 'METHOD_NOT_ALLOWED', `Method ${ctx.method} not allowed on ${ctx.path}`, undefined, {
        headers: { Allow: allow },
      });
    });
    const stopCompiling = compileValidators((error, operationId) =>
      logger.error({ err: error, operationId }, 'the contract has a request schema that does not compile'),
    );
    outbox.start();
    housekeeping.start();
    audit.start();
    logger.debug({ database: kind }, 'app ready');
    return {
      koa,
      services,
      logger,
      beginShutdown() {
        lifecycle.draining = true;
      },
      async close() {
        stopCompiling();
        await services.account.settled();
        await housekeeping.stop();
        await audit.stop();
        await outbox.stop();
        await db.destroy();
      },
    };
  } catch (error) {
    await db.destroy();
    throw error;
  }
}
