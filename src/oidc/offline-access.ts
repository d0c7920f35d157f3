import type Koa from 'koa';
import type { ProviderMiddleware } from './library.js';

/**
 * oidc-provider middleware (`provider.use`) for first-party clients' authorization requests. The
 * library keeps `offline_access` only in a request that says `prompt=consent` (OpenID Connect Core
 * §11: the person must be asked), and drops it silently otherwise. A first-party client is never
 * shown a consent page (an admin allowed it for everyone), so what that prompt stands for is
 * already given: its request for `offline_access` is taken as asking for consent too, and keeps
 * the scope, as relying-party libraries set up as their guides say expect. `prompt=none` is left
 * as it is: a silent request asks for nothing new. Other clients keep the library's rule.
 */
export function offlineAccessForFirstParty(
  authorizationPath: string,
  firstParty: (clientId: string) => Promise<boolean>,
): ProviderMiddleware {
  return async (ctx: Koa.Context, next) => {
    if (ctx.method === 'GET' && ctx.path === authorizationPath) {
      const query = new URLSearchParams(ctx.querystring);
      const scopes = (query.get('scope') ?? '').split(' ');
      const prompts = (query.get('prompt') ?? '').split(' ').filter(Boolean);
      const clientId = query.get('client_id');
      if (
        scopes.includes('offline_access') &&
        !prompts.includes('none') &&
        !prompts.includes('consent') &&
        query.getAll('prompt').length <= 1 &&
        clientId !== null &&
        (await firstParty(clientId))
      ) {
        query.set('prompt', [...prompts, 'consent'].join(' '));
        ctx.querystring = query.toString();
      }
    }
    await next();
  };
}
