import Koa from 'koa';
import { accountPagesRouter } from '../account-pages/router.js';
import { operationsFor } from '../handlers/index.js';
import type { Services } from '../handlers/types.js';
import type { OidcProvider } from '../oidc/provider.js';
import { oidcPagesRouter } from '../oidc-pages/router.js';
import type { Core } from './core.js';
import { buildApi } from '../http/api.js';
import { contractFor, validationContractFor, type Features } from '../http/contract.js';
import { docsRouter } from '../http/docs.js';
import { homePage } from '../http/home.js';
import { ApiError, notFound } from '../http/errors.js';
import { METRICS_PATH, metricsEndpoint, requestMetrics } from '../http/metrics.js';
import { accessLog, bodies, errors, requestId } from '../http/middleware.js';
import { corsFor, noStoreUnder, openableByOtherOriginsUnder, securityHeaders } from '../http/security.js';
import { stateOf } from '../http/state.js';
import { isApiKey } from '../api-keys/api-key-secrets.js';
import { consoleAssets } from '../console/assets.js';

export interface WebApp {
  koa: Koa;
  /** Stops compiling the contract's request validators in the background. */
  stop(): void;
}

/**
 * The service's Koa application: security headers, request ids, the access log and metrics, the
 * one error renderer, then the docs, the account pages, the hosted sign-in pages and the OpenID
 * Connect provider, and the contract's operations (without those of the parts `features` turns off).
 */
export async function webApp(
  core: Pick<Core, 'config' | 'logger' | 'metrics' | 'limits' | 'lifecycle' | 'tokens'>,
  services: Services,
  oidc: OidcProvider | undefined,
  features: Features,
  { compileValidatorsAhead }: { compileValidatorsAhead: boolean },
): Promise<WebApp> {
  const { config, logger, metrics, lifecycle, limits } = core;
  const document = contractFor(config.server, features);
  // The import route alone takes bodies up to IMPORT_MAX_BODY_BYTES, so that 1,000 rows fit.
  const [regularBodies, importBodies] = [bodies(config.server.maxBodyBytes), bodies(config.server.importMaxBodyBytes)];
  const { router, compileValidators } = await buildApi(
    validationContractFor(config.server, config.pagination, features),
    operationsFor(services),
    {
      // A bearer token is an API key (told by its prefix), the API's own access token (a JWT), or an
      // access token the OpenID Connect provider gave a first-party client such as the console.
      authenticate: (token, client) =>
        isApiKey(token)
          ? services.apiKeys.authenticate(token, client)
          : oidc && !token.includes('.')
            ? oidc.authenticate(token, client)
            : services.auth.authenticate(token, client),
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
  // The provider's endpoints and its hosted sign-in pages open in applications' popups.
  if (oidc) koa.use(openableByOtherOriginsUnder('/oauth2/'));
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
  // The provider's endpoints (under /oauth2/ and discovery) before the routes none of them is: the
  // provider answers its requests itself, and the routers below would only look for a match on each.
  if (oidc) koa.use(oidc.middleware);
  if (metrics) koa.use(metricsEndpoint(metrics, config.metrics.token));
  if (config.docs.enabled) koa.use(docsRouter(document).routes());
  if (config.console.enabled) koa.use(consoleAssets(config.console.folder));
  const service = String(document.info.title ?? 'Account Service');
  koa.use(homePage({ service, version: config.server.appVersion, docs: config.docs.enabled, oidc: oidc !== undefined }));
  if (config.account.pagesEnabled) {
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
  if (oidc) {
    koa.use(
      oidcPagesRouter({
        ...services,
        tokens: core.tokens,
        interactions: oidc.interactions,
        emailCodes: config.emailCode.enabled,
        appUrl: config.account.appUrl,
        secret: config.secret.key,
        guard: limits?.guard,
        service: config.oidc.brandName,
      }).routes(),
    );
  }
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
  const stop = compileValidatorsAhead
    ? compileValidators((error, operationId) =>
        logger.error({ err: error, operationId }, 'the contract has a request schema that does not compile'),
      )
    : () => {};
  return { koa, stop };
}
