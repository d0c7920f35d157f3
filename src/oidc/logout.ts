import type Koa from 'koa';
import type { ProviderPages } from './default-pages.js';
import type { ProviderMiddleware } from './library.js';
import { SELF_REGISTERED } from './registration.js';

/** What the provider's context holds once it has answered a logout request. */
interface LogoutContext extends Koa.Context {
  oidc?: {
    route?: string;
    client?: { metadata(): Record<string, unknown> };
    params?: Record<string, unknown>;
    session?: { accountId?: string; state?: { secret?: string } };
    urlFor(name: string): string;
  };
}

/** The origin of an http(s) address; undefined for any other. */
function webOrigin(address: unknown): string | undefined {
  if (typeof address !== 'string') return undefined;
  const url = URL.parse(address);
  return url && (url.protocol === 'https:' || url.protocol === 'http:') ? url.origin : undefined;
}

/** A Content-Security-Policy whose form-action also allows `origin`. */
function allowingFormTarget(policy: string, origin: string): string {
  return /(^|;)\s*form-action\b/.test(policy)
    ? policy.replace(/((?:^|;)\s*form-action)([^;]*)/, (_, directive: string, sources: string) => `${directive}${sources} ${origin}`)
    : policy;
}

/**
 * oidc-provider middleware (`provider.use`) for a logout request whose person has no provider session
 * left. The library answers it with a page that posts its own confirmation at once, which redirects to
 * the client's post_logout_redirect_uri:
 * - for a client that registered itself, nobody has asked the person anything yet: the service's logout
 *   page is shown instead, and the address is followed only once the person confirms;
 * - for an admin's client, the page's form-action (the service-wide 'self') would stop the browser at
 *   that redirect on a blank page: it is allowed to reach the client's origin.
 */
export function logoutWithoutSession(pages: ProviderPages): ProviderMiddleware {
  return async (ctx: LogoutContext, next) => {
    await next();
    const oidc = ctx.oidc;
    if (oidc?.route !== 'end_session' || ctx.status !== 200 || oidc.session?.accountId) return;
    const back = oidc.params?.post_logout_redirect_uri;
    if (back !== undefined && oidc.client?.metadata()[SELF_REGISTERED] === true) {
      // The library's own form, which the page's buttons submit (it names the form by this id).
      const secret = String(oidc.session?.state?.secret ?? '');
      const form = `<form id="op.logoutForm" method="post" action="${oidc.urlFor('end_session_confirm')}"><input type="hidden" name="xsrf" value="${secret}"/></form>`;
      await pages.logoutSource(ctx, form);
      return;
    }
    const origin = webOrigin(back);
    const policy = ctx.response.get('Content-Security-Policy');
    if (origin && policy) ctx.set('Content-Security-Policy', allowingFormTarget(policy, origin));
  };
}
