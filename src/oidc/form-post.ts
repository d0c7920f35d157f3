import type Koa from 'koa';
import type { ProviderMiddleware } from './library.js';

/** What the provider's context holds once it has answered an authorization request. */
interface AuthorizationContext extends Koa.Context {
  oidc?: {
    route?: string;
    params?: Record<string, unknown>;
    client?: { redirectUriAllowed(uri: string): boolean };
  };
}

/** Where a form may post to reach `address`: its origin for a web address, its scheme for a native application's. */
function formTarget(address: string): string | undefined {
  const url = URL.parse(address);
  if (!url) return undefined;
  return url.protocol === 'https:' || url.protocol === 'http:' ? url.origin : url.protocol;
}

/** A Content-Security-Policy whose form-action is `sources` alone. */
function withFormAction(policy: string, sources: string): string {
  const others = policy
    .split(';')
    .map((directive) => directive.trim())
    .filter((directive) => directive !== '' && !/^form-action\b/i.test(directive));
  return [...others, `form-action ${sources}`].join(';');
}

/**
 * oidc-provider middleware (`provider.use`) for the answer of `response_mode=form_post` (ASP.NET
 * Core's default, and express-openid-connect's): a page whose script posts the code to the client's
 * redirect URI at once. The service-wide `form-action 'self'` would stop that post in the browser;
 * on this page alone, form-action allows exactly the origin of the redirect URI, which the library
 * has checked is one the client registered. Every other page keeps form-action as it is, the
 * service's error page among them (`errorPages`: the contexts it was rendered for).
 */
export function formPostToRedirectUri(errorPages: WeakSet<object>): ProviderMiddleware {
  return async (ctx: AuthorizationContext, next) => {
    await next();
    // An error shown on the service's own page rather than posted to the client.
    if (errorPages.has(ctx)) return;
    const oidc = ctx.oidc;
    if ((oidc?.route !== 'authorization' && oidc?.route !== 'resume') || oidc.params?.response_mode !== 'form_post') return;
    const redirectUri = oidc.params.redirect_uri;
    if (typeof redirectUri !== 'string' || !ctx.response.is('html') || !oidc.client?.redirectUriAllowed(redirectUri)) return;
    const target = formTarget(redirectUri);
    const policy = ctx.response.get('Content-Security-Policy');
    if (target && policy) ctx.set('Content-Security-Policy', withFormAction(policy, target));
  };
}
