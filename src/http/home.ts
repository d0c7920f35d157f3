import type { Middleware } from 'koa';
import { escape, page } from '../account-pages/html.js';

export interface HomeOptions {
  /** The contract's title. */
  service: string;
  /** APP_VERSION. */
  version: string;
  /** DOCS_ENABLED: /docs, /redoc and /openapi.json are there. */
  docs: boolean;
  /** OIDC_ENABLED: the OpenID Connect provider publishes its configuration. */
  oidc: boolean;
}

/**
 * `/` for a person who opens the service's address in a browser: its name, its version and where to
 * go from there, in the account pages' look, under the service-wide Content-Security-Policy. Not part
 * of the contract: a client that asks for JSON rather than HTML gets the JSON 404 of any unknown route.
 */
export function homePage(options: HomeOptions): Middleware {
  const links: Array<[href: string, label: string]> = [];
  if (options.docs)
    links.push(['/docs', 'API reference (Swagger UI)'], ['/redoc', 'API reference (ReDoc)'], ['/openapi.json', 'OpenAPI document']);
  if (options.oidc) links.push(['/.well-known/openid-configuration', 'OpenID Connect configuration']);
  links.push(['/health', 'Health']);
  const body = `<p>${escape(options.service)}, version ${escape(options.version)}: accounts and sign-in through a JSON API.</p>
<nav aria-label="This service">
<ul>
${links.map(([href, label]) => `<li><a href="${href}">${escape(label)}</a></li>`).join('\n')}
</ul>
</nav>
`;
  const html = page(options.service, 'Welcome', body);
  return async (ctx, next) => {
    if (ctx.path !== '/' || (ctx.method !== 'GET' && ctx.method !== 'HEAD') || ctx.accepts('html', 'json') !== 'html') {
      await next();
      return;
    }
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = html;
  };
}
