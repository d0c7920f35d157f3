import cors from '@koa/cors';
import type { Context, Middleware } from 'koa';
import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet from 'helmet';

/**
 * The Content-Security-Policy of every response. JSON responses need none of it; it is there for
 * the documentation pages, which load everything from this origin:
 * - Swagger UI (/docs): its bundle and init script, its stylesheet plus inline style attributes,
 *   data: icons, and fetch() to this origin for Authorize and "Try it out";
 * - ReDoc (/redoc): its standalone bundle, the <style> elements it injects, and a worker it starts
 *   from a blob: URL. Its bundle always shows a sidebar logo from cdn.redoc.ly; images are limited
 *   to this origin (and data:/blob:), so the logo is blocked and the page loads nothing from
 *   elsewhere.
 * No `upgrade-insecure-requests`: the service may be reached over plain HTTP (locally, or behind
 * a proxy that terminates TLS elsewhere), where upgrading its own asset URLs would break the pages.
 */
export const CONTENT_SECURITY_POLICY = {
  'default-src': ["'self'"],
  'base-uri': ["'self'"],
  'connect-src': ["'self'"],
  'font-src': ["'self'", 'data:'],
  'form-action': ["'self'"],
  'frame-ancestors': ["'none'"],
  'img-src': ["'self'", 'data:', 'blob:'],
  'object-src': ["'none'"],
  'script-src': ["'self'"],
  'script-src-attr': ["'none'"],
  'style-src': ["'self'", "'unsafe-inline'"],
  'worker-src': ["'self'", 'blob:'],
  'upgrade-insecure-requests': null,
} as const;

/**
 * The policy above as a header value, with forms also allowed to end at `formTargets` (origins): a
 * browser checks `form-action` against the redirect a post is answered with, too.
 */
export function contentSecurityPolicyWith(formTargets: readonly string[]): string {
  return Object.entries(CONTENT_SECURITY_POLICY)
    .flatMap(([name, sources]) =>
      sources === null ? [] : [[name, name === 'form-action' ? [...sources, ...formTargets] : sources] as const],
    )
    .map(([name, sources]) => `${name} ${sources.join(' ')}`)
    .join(';');
}

/**
 * Helmet's defaults (nosniff, Referrer-Policy: no-referrer, HSTS, no X-Powered-By, and so on) with
 * the policy above and framing refused outright.
 */
export function securityHeaders(): Middleware {
  const headers = helmetHeaders();
  return async (ctx: Context, next) => {
    for (const [name, value] of headers) ctx.res.setHeader(name, value);
    await next();
  };
}

/**
 * With this configuration helmet's headers never depend on the request, so helmet runs once, here,
 * against a stand-in response, and each request only copies the result.
 */
function helmetHeaders(): ReadonlyArray<[string, string]> {
  const headers = new Map<string, string>();
  const response = {
    setHeader: (name: string, value: unknown) => headers.set(name, String(value)),
    removeHeader: (name: string) => headers.delete(name),
  };
  let ran = false;
  helmet({
    contentSecurityPolicy: { useDefaults: false, directives: CONTENT_SECURITY_POLICY },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
  })({} as IncomingMessage, response as unknown as ServerResponse, () => {
    ran = true;
  });
  if (!ran) throw new Error('helmet did not set its headers synchronously');
  return [...headers];
}

/**
 * `Cross-Origin-Opener-Policy: unsafe-none` under `prefix`, where helmet's `same-origin` is
 * everywhere else. An application's popup sign-in (oidc-client-ts's `signinPopup`, Auth0's and
 * MSAL's popups) opens the provider's pages from the application's origin, and its callback page
 * reports back to `window.opener`: a `same-origin` page on the way puts the popup in a browsing
 * context group of its own, and the opener is gone for good. Keycloak's and Auth0's sign-in pages
 * set no opener policy either. Framing stays refused (`frame-ancestors 'none'`, `X-Frame-Options`).
 */
export function openableByOtherOriginsUnder(prefix: string): Middleware {
  return async (ctx: Context, next) => {
    if (ctx.path.startsWith(prefix)) ctx.set('Cross-Origin-Opener-Policy', 'unsafe-none');
    await next();
  };
}

/**
 * `Cache-Control: no-store` on every response under `prefix`, errors and unknown routes included:
 * tokens and personal data must stay out of browser and proxy caches (RFC 6749 §5.1 asks it of
 * token responses; every API answer here is about someone). Set before the request is handled, so
 * that the one error renderer keeps it.
 */
export function noStoreUnder(prefix: string): Middleware {
  return async (ctx: Context, next) => {
    if (ctx.path === prefix || ctx.path.startsWith(`${prefix}/`)) ctx.set('Cache-Control', 'no-store');
    await next();
  };
}

/** Headers a browser client may read: request id, rate-limit state and the bearer challenge. */
export const CORS_EXPOSED_HEADERS = [
  'X-Request-Id',
  'Retry-After',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'WWW-Authenticate',
];

/**
 * CORS for the listed origins (`*` for any): an allowed origin is echoed back, any other gets no
 * Access-Control-Allow-Origin at all. No credentials: clients send bearer tokens, not cookies.
 * Preflight requests from an allowed origin are answered here with 204.
 */
export function corsFor(origins: readonly string[]): Middleware {
  const anyOrigin = origins.includes('*');
  const allowed = new Set(origins.map((origin) => origin.toLowerCase()));
  return cors({
    origin: (ctx: Context) => {
      const origin = ctx.get('Origin');
      if (!origin) return '';
      return anyOrigin || allowed.has(origin.toLowerCase()) ? origin : '';
    },
    credentials: false,
    allowMethods: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'],
    allowHeaders: ['Authorization', 'Content-Type', 'X-Request-Id'],
    exposeHeaders: CORS_EXPOSED_HEADERS,
    maxAge: 600,
  });
}
