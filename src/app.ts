import cluster from 'node:cluster';
import Koa from 'koa';
import type { Kysely } from 'kysely';
import type { Config } from './config';
import { openMigratedDatabase } from './db/migrate';
import { transactions } from './db/transaction';
import type { Database } from './db/types';
import { operationsFor } from './handlers';
import type { Services } from './handlers/types';
import { buildApi } from './http/api';
import { contractFor, validationContractFor } from './http/contract';
import { accountPagesRouter } from './account-pages/router';
import { docsRouter } from './http/docs';
import { homePage } from './http/home';
import { ApiError, notFound } from './http/errors';
import { METRICS_PATH, metricsEndpoint, requestMetrics } from './http/metrics';
import { accessLog, bodies, errors, requestId } from './http/middleware';
import { corsFor, noStoreUnder, securityHeaders } from './http/security';
import { stateOf } from './http/state';
import { rateLimitGuard } from './http/rate-limit';
import { createLogger, type Logger } from './logger';
import { AccountService } from './services/account';
import { AccountMail } from './services/account-mail';
import { ApiKeyService } from './services/api-keys';
import { isApiKey } from './services/api-key-secrets';
import { AuditService } from './services/audit';
import type { AuditEventType } from './services/audit-events';
import { AuthService } from './services/auth';
import { BreachedPasswords } from './services/breached-passwords';
import { CurrentPassword } from './services/current-password';
import { FactorService, type Clock } from './services/factors';
import { HealthService } from './services/health';
import { EmailCodeSignIn } from './email-code/email-code-sign-in';
import { ProviderAddressProof } from './email-code/provider-address';
import { Housekeeping } from './infra/housekeeping';
import { LoginGuard } from './services/login-guard';
import { MfaSignIn } from './services/mfa-sign-in';
import { Metrics } from './infra/metrics';
import { createTransport } from './infra/mail-transport';
import { Outbox } from './infra/outbox';
import { PwnedPasswordsRange } from './infra/pwned-passwords';
import { IdentityProviderRegistry } from './providers/registry';
import { LinkedIdentities } from './providers/identities';
import { ProviderSignIn } from './providers/sign-in';
import { MailboxClaim } from './mailbox/claim';
import { Reauthentication } from './reauthentication/reauthentication';
import { Upstream } from './providers/upstream';
import { PasswordHasher } from './services/passwords';
import { limiterFactory, StoreOutages } from './infra/rate-limiter';
import { TokenService } from './services/tokens';
import { TotpCodes } from './services/totp';
import { UserImport } from './services/user-import';
import { UserService } from './services/users';
import { WebAuthnParty } from './services/webauthn';
import { WebhookService } from './services/webhooks';
import { WebhookDispatcher } from './infra/webhooks';
import { createOidcProvider, type OidcProvider } from './oidc/provider';
import { providerPages } from './oidc-pages/provider-pages';
import { OauthClients } from './oidc/clients';
import { OauthGrants } from './oidc/grants';

/** The operations of the OpenID Connect provider's clients and grants, off with OIDC_ENABLED=false. */
const OIDC_OPERATIONS = [
  'listOauthClients',
  'createOauthClient',
  'getOauthClient',
  'updateOauthClient',
  'deleteOauthClient',
  'rotateOauthClientSecret',
  'listOauthGrants',
  'revokeOauthGrant',
  'openIdConfiguration',
  'oauth2Authorize',
  'oauth2Token',
  'oauth2UserInfo',
  'oauth2Introspect',
  'oauth2Revoke',
  'oauth2EndSession',
  'oauth2Register',
];
import { oidcPagesRouter, withProviderReturn } from './oidc-pages/router';

export interface App {
  koa: Koa;
  services: Services;
  /** The app's database, for the wiring's neighbours (tests read and seed rows through it). */
  db: Kysely<Database>;
  /** The purge on its schedule; `purge()` runs a pass now. */
  housekeeping: Housekeeping;
  /** Webhook delivery; `prune()` deletes finished deliveries past their retention now. */
  webhooks: WebhookDispatcher;
  /** The OpenID Connect provider, when OIDC_ENABLED. */
  oidc: OidcProvider | undefined;
  logger: Logger;
  /** Readiness turns 503 and responses ask clients to close their connections; requests are still served. */
  beginShutdown(): void;
  close(): Promise<void>;
}

export interface AppOptions {
  logger?: Logger;
  /** The clock TOTP codes and second-factor challenges are read against; tests move it. */
  clock?: Clock;
}

/** Wires the service: database (migrated), services, contract-driven routes and docs. */
export async function createApp(config: Config, options: AppOptions = {}): Promise<App> {
  const logger = options.logger ?? createLogger(config.logging);
  const { db, kind, pool } = await openMigratedDatabase(config.database);
  try {
    const tokens = new TokenService(config.tokens, config.secret.key);
    const outbox = new Outbox(db, config.mail, config.secret.key, createTransport(config.mail, logger), logger);
    const mail = new AccountMail(config.account, outbox);
    const housekeeping = new Housekeeping(db, config.housekeeping, config.audit, logger);
    const webhooks = new WebhookDispatcher(db, config.webhooks, config.secret.key, logger);
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
    });
    const passwords = new PasswordHasher({
      policy: config.passwords,
      concurrency: config.passwords.hashConcurrency,
      maxWaiting: config.passwords.hashQueueMax,
      maxPerCaller: config.passwords.hashCallerMax,
      observe: metrics && ((seconds) => metrics.observePasswordHash(seconds)),
    });
    const lifecycle = { draining: false };
    const loginGuard = limiter && (await LoginGuard.create(config.limits, config.secret.key, limiter));
    // A user's current password, asked for before they change their own credentials, counts like a login.
    const currentPassword = new CurrentPassword(passwords, transact, loginGuard);
    const now = options.clock ?? Date.now;
    const totp = new TotpCodes(config.mfa.totp, config.secret.key);
    const webauthn = new WebAuthnParty(config.mfa.webauthn);
    const factors = new FactorService(db, transact, totp, webauthn, now, mail);
    const mfa = new MfaSignIn(db, tokens, transact, totp, webauthn, factors, {
      now,
      requireVerifiedEmail: config.sessions.requireVerifiedEmail,
      loginGuard,
    });
    const breached = config.passwords.pwnedPasswords.enabled
      ? new BreachedPasswords(
          new PwnedPasswordsRange(config.passwords.pwnedPasswords),
          logger,
          metrics && (() => metrics.countPwnedPasswordsUnavailable()),
        )
      : undefined;
    const providers = new IdentityProviderRegistry(db, transact, config.secret.key, config.providers.allowPrivateUrls);
    const mailbox = new MailboxClaim(outbox, passwords);
    const limits = limiter && (await rateLimitGuard(config.limits, limiter));
    const oidc = config.oidc.enabled
      ? createOidcProvider({
          db,
          config: config.oidc,
          issuer: config.tokens.issuer,
          secret: config.secret.key,
          accessTokenMinutes: config.tokens.accessTokenExpireMinutes,
          refreshTokenDays: config.tokens.refreshTokenExpireDays,
          sessionDays: config.sessions.maxDays,
          trustProxy: config.server.trustProxy,
          allowPrivateUrls: config.providers.allowPrivateUrls,
          logger,
          pages: providerPages(config.oidc.brandName),
          guard: limits?.guard,
        })
      : undefined;
    // The JWK Set publishes the provider's key beside the API's (the same key when ALGORITHM is RS256 or ES256).
    const apiKeys = config.tokens.keys.jwks;
    const jwks = async () => {
      const jwk = await oidc?.publishedKey();
      return jwk && !apiKeys.keys.some((key) => key.kid === jwk.kid) ? { keys: [...apiKeys.keys, jwk] } : apiKeys;
    };
    const services: Services = {
      about: { version: config.server.appVersion, startedAt: Date.now() },
      jwks,
      auth: new AuthService(db, config.sessions, tokens, mail, passwords, transact, loginGuard, mfa, breached),
      account: new AccountService(db, config.account, mail, passwords, transact, logger, currentPassword, mailbox, loginGuard, breached),
      users: new UserService(db, config.pagination, mail, passwords, transact, currentPassword, breached),
      imports: new UserImport(transact),
      audit: new AuditService(db, config.pagination),
      health: new HealthService(db, lifecycle),
      factors,
      mfa,
      apiKeys: new ApiKeyService(db, transact, config.apiKeys, mail),
      webhooks: new WebhookService(db, transact, config.webhooks, config.pagination, config.secret.key),
      providers,
      providerSignIn: new ProviderSignIn(db, transact, providers, new Upstream(config.providers.allowPrivateUrls), tokens, passwords, {
        mail,
        redirects: withProviderReturn(config.redirects, config.account.appUrl),
        sessions: config.sessions,
        secretKey: config.secret.key,
        addressProof: new ProviderAddressProof(config.emailCode, config.account, {
          db,
          transact,
          outbox,
          secret: config.secret.key,
          loginGuard,
        }),
        mailbox,
        loginGuard,
        secondFactor: mfa,
      }),
      oauthClients: new OauthClients(db, transact, config.secret.key),
      oauthGrants: new OauthGrants(db, transact),
      identities: new LinkedIdentities(db, transact),
      reauthentication: new Reauthentication(db, transact, tokens, currentPassword, totp, config.sessions, { now, loginGuard }),
      emailCode: new EmailCodeSignIn(config.emailCode, config.account, config.redirects, {
        db,
        transact,
        outbox,
        tokens,
        passwords,
        logger,
        secret: config.secret.key,
        loginGuard,
        secondFactor: mfa,
        mailbox,
      }),
    };
    if (config.admin) {
      const admin = await services.users.ensureAdmin(config.admin.email, config.admin.password);
      if (admin) logger.info({ userId: admin.id }, 'created the admin account from ADMIN_EMAIL');
    }

    // Operations a setting turned off are left out of the contract: they answer 404 as unknown routes do.
    const switchedOff = [
      ...(config.emailCode.enabled ? [] : ['requestEmailCode', 'verifyEmailCode']),
      ...(config.oidc.enabled ? [] : OIDC_OPERATIONS),
    ];
    const document = contractFor(config.server, switchedOff);
    // The import route alone takes bodies up to IMPORT_MAX_BODY_BYTES, so that 1,000 rows fit.
    const [regularBodies, importBodies] = [bodies(config.server.maxBodyBytes), bodies(config.server.importMaxBodyBytes)];
    const { router, compileValidators } = await buildApi(
      validationContractFor(config.server, config.pagination, switchedOff),
      operationsFor(services),
      {
        // A bearer token is an access token or an API key, told apart by the key's prefix.
        authenticate: (token, client) => (isApiKey(token) ? services.apiKeys : services.auth).authenticate(token, client),
        requirePresence: (principal, currentPassword) => services.reauthentication.requirePresence(principal, currentPassword),
        guard: limits?.guard,
        bodyGuard: limits?.bodyGuard,
        parseBody: (ctx, next) => (stateOf(ctx).operationId === 'importUsers' ? importBodies : regularBodies)(ctx, next),
      },
    );
    // Behind a proxy, the client is the address that proxy appended last to X-Forwarded-For; earlier
    // entries come from the client and could be anything.
    const koa = new Koa({ proxy: config.server.trustProxy, maxIpsCount: 1 });
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
    if (config.server.corsOrigins.length > 0) koa.use(corsFor(config.server.corsOrigins));
    koa.use(errors(logger));
    if (metrics) koa.use(metricsEndpoint(metrics, config.metrics.token));
    if (config.docs.enabled) koa.use(docsRouter(document).routes());
    koa.use(
      homePage({
        service: String(document.info.title ?? 'Account Service'),
        version: config.server.appVersion,
        docs: config.docs.enabled,
        oidc: oidc !== undefined,
      }),
    );
    if (config.account.pagesEnabled) {
      const service = String(document.info.title ?? 'Account Service');
      koa.use(
        accountPagesRouter({
          account: services.account,
          emailCode: config.emailCode.enabled ? services.emailCode : undefined,
          redirects: config.redirects,
          secret: config.secret.key,
          guard: limits?.guard,
          service,
        }).routes(),
      );
    }
    if (oidc)
      koa.use(
        oidcPagesRouter({
          ...services,
          mfa,
          tokens,
          interactions: oidc.interactions,
          emailCodes: config.emailCode.enabled,
          appUrl: config.account.appUrl,
          secret: config.secret.key,
          guard: limits?.guard,
          service: config.oidc.brandName,
        }).routes(),
      );
    if (oidc) koa.use(oidc.middleware);
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
    webhooks.start();
    logger.debug({ database: kind }, 'app ready');
    return {
      koa,
      services,
      db,
      housekeeping,
      webhooks,
      oidc,
      logger,
      beginShutdown() {
        lifecycle.draining = true;
      },
      async close() {
        stopCompiling();
        await services.account.settled();
        await services.emailCode.settled();
        await housekeeping.stop();
        await outbox.stop();
        await webhooks.stop();
        await db.destroy();
      },
    };
  } catch (error) {
    await db.destroy();
    throw error;
  }
}
